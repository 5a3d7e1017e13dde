// `membus up` for the integration tests: started on free loopback ports with the hash embedder,
// ready when its ready block matches, and stopped as a user stops it (SIGINT, then SIGKILL).
import { spawn } from "node:child_process";
import { createServer } from "node:net";

export async function freePort() {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once("error", rej);
    s.listen(0, "127.0.0.1", () => { const { port } = /** @type {any} */ (s.address()); s.close(() => res(port)); });
  });
}

/**
 * Starts `membus up --data-dir dataDir` with extra args; resolves once stdout matches every
 * regexp of `ready`, with the process, the HTTP base URL and each regexp's match.
 * @param {string} bin @param {string} dataDir @param {string[]} args @param {RegExp[]} ready
 */
export async function startMembusUp(bin, dataDir, args, ready) {
  const [h, n] = [await freePort(), await freePort()];
  const proc = spawn(bin, ["up", "--data-dir", dataDir, "--http-addr", `127.0.0.1:${h}`, "--nats-listen", `127.0.0.1:${n}`,
    "--embedder", "hash", "--log-level", "warn", ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "", err = "";
  proc.stderr.on("data", (d) => { err += d; });
  const matches = await new Promise((res, rej) => {
    const timer = setTimeout(() => rej(new Error(`membus up did not start in 30s:\n${out}\n${err.slice(-2000)}`)), 30000);
    proc.on("exit", (code) => { clearTimeout(timer); rej(new Error(`membus up exited ${code}:\n${out}\n${err.slice(-2000)}`)); });
    proc.stdout.on("data", (d) => {
      out += d;
      const m = ready.map((re) => re.exec(out));
      if (m.every(Boolean)) { clearTimeout(timer); res(m); }
    });
  });
  return { proc, http: `http://127.0.0.1:${h}`, matches: /** @type {RegExpExecArray[]} */ (matches) };
}

/** @param {import("node:child_process").ChildProcess | undefined} proc */
export async function stopMembusUp(proc) {
  if (!proc || proc.exitCode !== null) return;
  const exited = new Promise((r) => proc.once("exit", r));
  proc.kill("SIGINT");
  await Promise.race([exited, new Promise((r) => setTimeout(r, 10000))]);
  if (proc.exitCode === null) proc.kill("SIGKILL");
}
