// NATS over TLS, end to end: `membus up` serving a self-signed certificate the test makes with
// openssl, the setup line it prints, and the plugin's transport trusting that certificate
// (natsTlsCa) — and refusing the server without it.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { status } from "../../src/cli.js";
import { startMembusUp, stopMembusUp } from "./membus-up.js";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../../..");
const membusBin = process.env.MEMBUS_BIN || join(repoRoot, "bin/membus");
const hasOpenssl = (() => { try { execFileSync("openssl", ["version"]); return true; } catch { return false; } })();
const why = !existsSync(membusBin) ? `membus binary missing at ${membusBin}: run make build (or set MEMBUS_BIN)`
  : !hasOpenssl ? "openssl is not installed (Debian: apt-get install openssl)" : "";
const skip = why ? (process.env.CI === "true" ? assert.fail(why) : why) : false;

let dir, membus, natsUrl, tlsCa, apiKey, certFile, setupLine;

before(async () => {
  if (skip) return;
  dir = mkdtempSync(join(tmpdir(), "membus-oc-tls-"));
  certFile = join(dir, "cert.pem");
  const keyFile = join(dir, "key.pem");
  execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
    "-keyout", keyFile, "-out", certFile, "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"], { stdio: "ignore" });
  const dataDir = join(dir, "data");
  const up = await startMembusUp(membusBin, dataDir, ["--tls-cert", certFile, "--tls-key", keyFile], [/openclaw membus setup --nats-url (\S+) --nats-tls-ca (\S+)/]);
  membus = up.proc;
  [setupLine, natsUrl, tlsCa] = up.matches[0];
  apiKey = execFileSync(membusBin, ["keys", "create", "--data-dir", dataDir, "--account", "default", "--role", "admin", "--name", "openclaw"], { encoding: "utf8" }).trim();
}, { timeout: 60000 });

after(async () => {
  await stopMembusUp(membus);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const ocConfig = (/** @type {Record<string, string>} */ config) => ({ plugins: { entries: { membus: { enabled: true, config } }, slots: { contextEngine: "membus" } } });

test("membus up over TLS prints a setup line with the certificate to trust", { skip }, () => {
  assert.match(natsUrl, /^tls:\/\/127\.0\.0\.1:\d+$/, setupLine);
  assert.equal(tlsCa, certFile, "a self-signed certificate is its own CA");
});

test("the plugin reaches membus over TLS with natsTlsCa, and refuses it without", { skip }, async () => {
  const trusted = await status(ocConfig({ natsUrl, apiKey, natsTlsCa: tlsCa }), {}, undefined);
  assert.equal(trusted.ok, true, `with natsTlsCa: ${trusted.error}`);
  assert.equal(trusted.tls, tlsCa);
  // The environment variable works as the config key does.
  const viaEnv = await status(ocConfig({ natsUrl, apiKey }), { MEMBUS_NATS_TLS_CA: tlsCa }, undefined);
  assert.equal(viaEnv.ok, true, `with MEMBUS_NATS_TLS_CA: ${viaEnv.error}`);
  // Without the CA the system's roots do not know a self-signed certificate: no connection.
  const untrusted = await status(ocConfig({ natsUrl, apiKey, timeouts: /** @type {any} */ ({ connectMs: 3000 }) }), {}, undefined);
  assert.equal(untrusted.ok, false, "connected to a self-signed server without trusting it");
  assert.equal(untrusted.tls, "system roots");
  assert.match(String(untrusted.error), /certificate|self.signed|TLS/i, String(untrusted.error));
});
