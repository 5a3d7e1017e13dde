// `openclaw membus setup` / `status`: the config they write and the report they print.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { applySetup, formatStatus, setupEntry, status } from "../../src/cli.js";
import { fakeTransport } from "./helpers.js";
import { MembusError } from "../../src/transport.js";

test("setup writes the entry, takes the context-engine slot and turns the memory slot off", () => {
  const draft = { plugins: { entries: { membus: { enabled: false, config: { recallLimit: 9 } }, other: { enabled: true } }, slots: { memory: "memory-core" } }, agents: {} };
  applySetup(draft, { natsUrl: "nats://127.0.0.1:4222", token: "${MEMBUS_NATS_TOKEN}" }, { keepMemoryCore: false });
  assert.deepEqual(draft.plugins.entries.membus, { enabled: true, config: { recallLimit: 9, natsUrl: "nats://127.0.0.1:4222", token: "${MEMBUS_NATS_TOKEN}" } });
  assert.deepEqual(draft.plugins.slots, { memory: "none", contextEngine: "membus" });
  assert.deepEqual(draft.plugins.entries.other, { enabled: true }, "other plugins are left alone");
  const kept = applySetup({}, { natsUrl: "nats://h:1" }, { keepMemoryCore: true });
  assert.deepEqual(kept.plugins.slots, { contextEngine: "membus" });
});

test("setup options: the token from a file, bad values named, token and file exclusive", () => {
  const dir = mkdtempSync(join(tmpdir(), "membus-cli-"));
  writeFileSync(join(dir, "nats.token"), "tok-123\n");
  assert.deepEqual(setupEntry({ natsUrl: "nats://h:4222", tokenFile: join(dir, "nats.token"), account: "acme", user: "alice" }),
    { natsUrl: "nats://h:4222", token: "tok-123", account: "acme", user: "alice" });
  assert.deepEqual(setupEntry({ natsUrl: "nats://h:4222", token: "${MEMBUS_NATS_TOKEN}" }), { natsUrl: "nats://h:4222", token: "${MEMBUS_NATS_TOKEN}" },
    "an environment reference is written as given, set or not");
  assert.throws(() => setupEntry({ token: "a", tokenFile: "b" }), /not both/);
  assert.throws(() => setupEntry({ tokenFile: join(dir, "missing") }), /read --token-file/);
  assert.throws(() => setupEntry({ account: "Not Valid" }), /account: must be/);
});

test("status: reachable when membus answers the probe (not_found is an answer), with the slots and tenant", async () => {
  const oc = { plugins: { entries: { membus: { config: { natsUrl: "nats://h:1", token: "t", account: "acme" } } }, slots: { contextEngine: "membus", memory: "none" } } };
  const notFound = fakeTransport({ "session.get": () => { throw new MembusError("not_found", "session membus-status-probe not found"); } });
  const r = await status(oc, {}, () => notFound);
  assert.equal(r.ok, true);
  assert.equal(r.natsUrl, "nats://h:1");
  assert.equal(r.auth, "token");
  assert.equal(r.account, "acme");
  assert.equal(r.contextEngineSlot, "membus");
  assert.equal(r.memorySlot, "none");
  assert.equal(notFound.requests[0].op, "session.get");
  assert.match(formatStatus(r), /reachable/);

  const down = fakeTransport({});
  down.setDown(true);
  const d = await status({}, {}, () => down);
  assert.equal(d.ok, false);
  assert.match(d.error, /connection refused/);
  assert.match(formatStatus(d), /NOT reachable[\s\S]*run `openclaw membus setup`/);
});

test("status --session-id: the membus id of an OpenClaw session and what membus holds of it", async () => {
  const sessions = new Map([[createHash("sha256").update("agent:main:explicit:abc").digest("hex"), { v: 1, message_count: 4, pending_tokens: 20, commit_count: 1, memories: { profile: 1 } }]]);
  const t = fakeTransport({ "session.get": (b) => {
    const s = sessions.get(b.session_id);
    if (!s) throw new MembusError("not_found", "not found");
    return s;
  } });
  const r = await status({}, {}, () => t, undefined, { sessionId: "abc", sessionKey: "agent:main:explicit:abc" });
  assert.deepEqual(r.session, { sessionId: "abc", sessionKey: "agent:main:explicit:abc", storageId: createHash("sha256").update("agent:main:explicit:abc").digest("hex"), found: true, messageCount: 4, pendingTokens: 20, commitCount: 1, memories: { profile: 1 } });
  const uuid = await status({}, {}, () => t, undefined, { sessionId: "3F2504E0-4F89-11D3-9A0C-0305E82C3301", sessionKey: "agent:main:main" });
  assert.equal(uuid.session.storageId, "3f2504e0-4f89-11d3-9a0c-0305e82c3301", "a UUID session id is the membus id, lower-cased");
  assert.equal(uuid.session.found, false);
  assert.match(formatStatus(uuid), /not seen by membus yet/);
});

test("setup with an API key: written as given (a reference too), exclusive with a token, redacted in the report", () => {
  const key = "mbk_0123456789abcdef_" + "ab".repeat(24);
  assert.deepEqual(setupEntry({ natsUrl: "nats://h:4222", apiKey: key }), { natsUrl: "nats://h:4222", apiKey: key });
  assert.deepEqual(setupEntry({ apiKey: "${MEMBUS_API_KEY}" }), { natsUrl: "nats://127.0.0.1:4222", apiKey: "${MEMBUS_API_KEY}" });
  assert.throws(() => setupEntry({ apiKey: key, token: "t" }), /--api-key or a token, not both/);
});

test("status names the API key as the auth in use", async () => {
  const oc = { plugins: { entries: { membus: { config: { natsUrl: "nats://h:1", apiKey: "mbk_0123456789abcdef_00", account: "acme" } } }, slots: { contextEngine: "membus", memory: "none" } } };
  const ok = fakeTransport({ "session.get": () => { throw new MembusError("not_found", "no session"); } });
  const r = await status(oc, {}, () => ok);
  assert.equal(r.auth, "apiKey");
});
