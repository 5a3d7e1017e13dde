// The real-host acceptance test: OpenClaw 2026.9.6's own gateway and agent runner, with this
// plugin installed the way the README says, against `membus up` and a fake OpenAI-compatible model
// on loopback that records every request. What decides is what reaches the model.
//
// Needs OPENCLAW_HOST_BIN (an `openclaw` whose package may write into itself: its first start
// completes the package's lifecycle) and MEMBUS_BIN; scripts/test.sh prepares both. Outside CI
// the test skips when they are missing; with CI=true it fails.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFile } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { createHash } from "node:crypto";
import { startFakeModel, textOf } from "./fake-model.js";

const PLUGIN_DIR = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const OPENCLAW = process.env.OPENCLAW_HOST_BIN ?? "";
const MEMBUS = process.env.MEMBUS_BIN ?? join(PLUGIN_DIR, "..", "..", "bin", "membus");
const IN_CI = process.env.CI === "true" || process.env.CI === "1";
// Well above the gap between two turns of one session, and between a session's last turn and the
// compaction after it: each is an `openclaw` CLI start, which took up to 25 s at load average 20
// (CI beside four other jobs). At 20 s the idle commit once archived session 2 before its
// /compact arrived, which then rightly had nothing left to compact ("no_messages").
const IDLE_COMMIT = "60s";

const sha = (/** @type {string} */ s) => createHash("sha256").update(s).digest("hex");
const BLOCK_RE = /<relevant-memories>[\s\S]*?<\/relevant-memories>/g;

async function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, "127.0.0.1", () => {
      const port = /** @type {import("node:net").AddressInfo} */ (srv.address()).port;
      srv.close(() => resolve(port));
    });
    srv.on("error", reject);
  });
}

/** @param {() => Promise<any>} fn @param {number} ms @param {string} what */
async function eventually(fn, ms, what) {
  const deadline = Date.now() + ms;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) { last = e; }
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms${last ? ` (last error: ${last})` : ""}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

test("a real OpenClaw agent turn gets its memories; every session becomes memory", { timeout: 900_000 }, async (t) => {
  if (!OPENCLAW || !existsSync(OPENCLAW) || !existsSync(MEMBUS)) {
    const why = `needs OPENCLAW_HOST_BIN (${OPENCLAW || "unset"}) and MEMBUS_BIN (${MEMBUS}); scripts/test.sh prepares both`;
    if (IN_CI) assert.fail(why);
    t.skip(why);
    return;
  }
  const run = mkdtempSync(join(tmpdir(), "membus-openclaw-host-"));
  t.diagnostic(`run dir: ${run}`);
  /** @type {import("node:child_process").ChildProcess[]} */
  const procs = [];
  const fake = await startFakeModel();
  t.after(async () => {
    for (const p of procs.reverse()) p.kill("SIGTERM");
    await Promise.all(procs.map((p) => new Promise((r) => (p.exitCode !== null ? r(undefined) : p.once("exit", r)))));
    await fake.close();
  });

  // membus, as a user starts it (short idle commit for the test).
  const [httpPort, natsPort, gwPort] = [await freePort(), await freePort(), await freePort()];
  const dataDir = join(run, "membus-data");
  const membus = spawn(MEMBUS, ["up", "--data-dir", dataDir, "--http-addr", `127.0.0.1:${httpPort}`, "--nats-listen", `127.0.0.1:${natsPort}`,
    "--embedder", "hash", "--idle-commit", IDLE_COMMIT], { stdio: ["ignore", "pipe", "pipe"] });
  procs.push(membus);
  let membusOut = "";
  membus.stdout.on("data", (c) => { membusOut += c; });
  const membusLog = join(run, "membus.log");
  membus.stderr.on("data", (c) => writeFileSync(membusLog, c, { flag: "a" }));
  await eventually(async () => /plugin:\s+openclaw membus setup --nats-url /.test(membusOut), 60_000, "membus up prints its ready block");
  const natsUrl = /openclaw membus setup --nats-url (\S+)/.exec(membusOut)?.[1];
  const devKey = /dev API key[^:]*:\s*(\S+)/.exec(membusOut)?.[1];
  assert.ok(natsUrl && devKey, `membus up printed: ${membusOut}`);
  const api = async (/** @type {string} */ path) => {
    const r = await fetch(`http://127.0.0.1:${httpPort}${path}`, { headers: { authorization: `Bearer ${devKey}` } });
    if (!r.ok) throw new Error(`GET ${path}: ${r.status} ${await r.text()}`);
    return r.json();
  };
  const memoriesText = async () => (await api("/v1/memories?limit=200")).items.map((/** @type {any} */ m) => m.text).join("\n");
  const recalls = async () => {
    const r = await fetch(`http://127.0.0.1:${httpPort}/metrics`, { headers: { authorization: `Bearer ${devKey}` } });
    const m = /^membus_recall_seconds_count(?:\{[^}]*\})? (\d+)/m.exec(await r.text());
    return m ? Number(m[1]) : 0;
  };

  // OpenClaw, isolated in the run dir and offline.
  const home = join(run, "home");
  const state = join(home, ".openclaw");
  mkdirSync(state, { recursive: true });
  const env = {
    ...process.env,
    OPENCLAW_HOME: home, OPENCLAW_STATE_DIR: state, OPENCLAW_CONFIG_PATH: join(state, "openclaw.json"),
    OPENCLAW_OFFLINE: "1", OPENCLAW_NO_AUTO_UPDATE: "1", OPENCLAW_DISABLE_BONJOUR: "1",
    OPENCLAW_GATEWAY_TOKEN: "membus-host-test", NO_COLOR: "1", FORCE_COLOR: "0",
  };
  const configPath = env.OPENCLAW_CONFIG_PATH;
  writeFileSync(configPath, JSON.stringify({
    agents: { defaults: { model: { primary: "fake/fake-model" }, workspace: join(run, "workspace"), skipBootstrap: true, heartbeat: { every: "0m" } } },
    models: {
      mode: "replace", catalogRefresh: { enabled: false },
      providers: { fake: { baseUrl: fake.url, apiKey: "fake-key", api: "openai-completions", models: [{
        id: "fake-model", name: "Fake Model", reasoning: false, input: ["text"],
        cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 128000, maxTokens: 4096 }] } },
    },
    tools: { toolSearch: false }, // the fake calls our tools by name
    update: { checkOnStart: false }, telemetry: { enabled: false }, cron: { enabled: false },
    logging: { file: join(run, "openclaw.log") },
    gateway: { mode: "local", port: gwPort, bind: "loopback", auth: { mode: "token", token: "membus-host-test" }, controlUi: { enabled: false }, tailscale: { mode: "off" } },
  }, null, 2));

  /** @param {string[]} args @param {number} [timeoutMs] */
  const openclaw = (args, timeoutMs = 180_000) => new Promise((resolve) => {
    execFile(OPENCLAW, args, { env, timeout: timeoutMs, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === "number" ? err.code : 1) : 0, stdout: String(stdout), stderr: String(stderr) });
    }).stdin?.end();
  });
  /** @param {any} r @param {string} what */
  const ok = (r, what) => assert.equal(r.code, 0, `${what} exited ${r.code}\nstdout: ${r.stdout.slice(-2000)}\nstderr: ${r.stderr.slice(-2000)}`);

  // Install and set up as the plugin README says.
  ok(await openclaw(["plugins", "install", "-l", "--force", "--accept-capabilities", PLUGIN_DIR]), "openclaw plugins install -l");
  // The plugin's bus credential is an admin API key of the account, as the README creates it:
  // the bus binds the connection to that account (the shared NATS token is not given out).
  const apiKey = await new Promise((resolve, reject) => {
    execFile(MEMBUS, ["keys", "create", "--data-dir", dataDir, "--account", "default", "--role", "admin", "--name", "openclaw"], (err, stdout, stderr) => {
      if (err) reject(new Error(`membus keys create: ${err.message}\n${stderr}`));
      else resolve(String(stdout).trim());
    });
  });
  const setup = await openclaw(["membus", "setup", "--nats-url", natsUrl, "--api-key", apiKey, "--json"]);
  ok(setup, "openclaw membus setup");
  const setupOut = JSON.parse(setup.stdout);
  assert.equal(setupOut.ok, true, setup.stdout);
  const written = JSON.parse(readFileSync(configPath, "utf8"));
  assert.equal(written.plugins.slots.contextEngine, "membus");
  assert.equal(written.plugins.slots.memory, "none");
  assert.equal(written.plugins.entries.membus.config.natsUrl, natsUrl);
  const statusRun = await openclaw(["membus", "status", "--json"]);
  ok(statusRun, "openclaw membus status --json");
  const st = JSON.parse(statusRun.stdout);
  assert.equal(st.ok, true, statusRun.stdout);
  t.diagnostic(`openclaw membus status --json: ok=${st.ok} natsUrl=${st.natsUrl} auth=${st.auth} contextEngine=${st.contextEngineSlot} memory=${st.memorySlot} latency=${st.latencyMs}ms`);
  const inspect = await openclaw(["plugins", "inspect", "membus", "--runtime", "--json"]);
  ok(inspect, "openclaw plugins inspect membus");
  const plugin = JSON.parse(inspect.stdout).plugin;
  assert.equal(plugin.status, "loaded");
  assert.deepEqual(plugin.contextEngineIds, ["membus"]);
  t.diagnostic(`openclaw plugins inspect membus: status=${plugin.status} engines=${plugin.contextEngineIds} tools=${plugin.toolNames.length}`);

  // The gateway runs the agent turns (`openclaw agent` goes through it).
  const gw = spawn(OPENCLAW, ["gateway", "run"], { env, stdio: ["ignore", "ignore", "pipe"] });
  procs.push(gw);
  let gwErr = "";
  gw.stderr.on("data", (c) => { gwErr += c; });
  await eventually(async () => (await fetch(`http://127.0.0.1:${gwPort}/readyz`)).ok, 120_000, "the OpenClaw gateway is ready");

  /** One real agent turn; returns the reply text. @param {string} session @param {string} message @param {string} step */
  const turn = async (session, message, step) => {
    fake.setStep(step);
    const r = await openclaw(["agent", "--session-id", session, "-m", message, "--json"]);
    ok(r, `openclaw agent (${step})\ngateway stderr: ${gwErr.slice(-2000)}`);
    const d = JSON.parse(r.stdout);
    const res = d.result ?? d;
    return (res.payloads ?? []).map((/** @type {any} */ p) => p.text).join(" ");
  };
  const requestsOf = (/** @type {string} */ step) => fake.requests.filter((r) => r.step === step);
  const blocksIn = (/** @type {any} */ body) => JSON.stringify(body.messages ?? []).match(BLOCK_RE) ?? [];
  const blocksOf = (/** @type {any} */ body) => (body.messages ?? []).flatMap((/** @type {any} */ m) => textOf(m.content).match(BLOCK_RE) ?? []);

  // Session 1 states three facts and ends (the host resets it: session_end → commit).
  const s1 = `s1-${Date.now()}`;
  for (const [i, fact] of ["My favourite colour is teal.", "I work as a marine biologist.", "My dog is named Pixel."].entries()) {
    await turn(s1, fact, `s1-${i}`);
  }
  ok(await openclaw(["gateway", "call", "sessions.reset", "--params", JSON.stringify({ key: `agent:main:explicit:${s1}` })]), "sessions.reset");
  await eventually(async () => {
    const text = await memoriesText();
    return /teal/i.test(text) && /marine biologist/i.test(text) && /Pixel/.test(text);
  }, 60_000, "session 1's three facts are memories after the session ended");
  const s1Storage = sha(`agent:main:explicit:${s1}`);
  const hookLine = await eventually(async () => {
    const logs = gwErr + (existsSync(join(run, "openclaw.log")) ? readFileSync(join(run, "openclaw.log"), "utf8") : "");
    return new RegExp(`membus: session_end:reset: session ${s1Storage} committed[^\n"]*`).exec(logs)?.[0];
  }, 30_000, "the plugin's session_end hook committed session 1");
  t.diagnostic(`session end: ${hookLine}`);

  // Session 2 asks about each: every model request carries the matching memory in one block.
  const s2 = `s2-${Date.now()}`;
  const questions = [["What is my favourite colour?", /teal/i], ["What do I do for work?", /marine biologist/i], ["What is my dog's name?", /Pixel/]];
  for (const [i, [q, want]] of questions.entries()) {
    const step = `s2-${i}`;
    const recallsBefore = await recalls();
    await turn(s2, /** @type {string} */ (q), step);
    const reqs = requestsOf(step);
    assert.ok(reqs.length >= 1, `${step}: the model was called`);
    for (const r of reqs) {
      const blocks = blocksOf(r.body);
      assert.equal(blocks.length, 1, `${step}: exactly one <relevant-memories> block per request, got ${blocks.length}`);
      assert.match(blocks[0], /** @type {RegExp} */ (want), `${step}: the block holds the memory: ${blocks[0]}`);
      assert.equal(blocksIn(r.body).length, 1, `${step}: no block appears twice anywhere in the request`);
    }
    assert.equal(await recalls() - recallsBefore, 1, `${step}: one recall for the turn`);
  }

  // A tool loop (tool call, tool result, answer): two model calls, still one recall, one block each.
  const loopStep = "s2-tool-loop";
  const before = await recalls();
  const answer = await turn(s2, "What did I do today? CALL_TOOL memory_summary {}", loopStep);
  const loopReqs = requestsOf(loopStep);
  assert.equal(loopReqs.length, 2, "tool call, then the answer");
  for (const r of loopReqs) assert.ok(blocksOf(r.body).length <= 1, "no block twice in a tool loop");
  assert.equal(JSON.stringify(blocksOf(loopReqs[0].body)), JSON.stringify(blocksOf(loopReqs[1].body)), "the tool loop reuses the turn's recall");
  assert.equal(await recalls() - before, 1, "the tool loop adds no second recall");
  // memory_summary with no arguments answers (today, in the configured time zone).
  assert.match(answer, /TOOL_RESULT_SEEN: (No day digest|.*digest)/i, answer);
  assert.doesNotMatch(answer, /YYYY-MM-DD|failed/i, answer);
  t.diagnostic(`memory_summary with no arguments: ${answer.slice(0, 200)}`);

  // /compact (through the gateway, as the host's sessions.compact) returns a summary.
  const compact = await openclaw(["sessions", "compact", `agent:main:explicit:${s2}`, "--json"]);
  ok(compact, "openclaw sessions compact");
  const c = JSON.parse(compact.stdout);
  assert.equal(c.compacted, true, compact.stdout);
  assert.ok(typeof c.result?.summary === "string" && c.result.summary.length > 0, `compact summary: ${compact.stdout}`);
  assert.ok(c.result.tokensBefore > c.result.tokensAfter, compact.stdout);
  t.diagnostic(`/compact: tokens ${c.result.tokensBefore} → ${c.result.tokensAfter}, summary: ${c.result.summary}`);

  // The first turn after a commit: membus's context block (summary, archive index) is in the
  // model's input once, however many times the host assembles.
  await turn(s2, "Thanks! CALL_TOOL archive_search {\"query\":\"dog\"}", "s2-after-compact");
  const after = requestsOf("s2-after-compact");
  assert.equal(after.length, 2);
  for (const r of after) {
    const n = JSON.stringify(r.body.messages).split("<membus-context>").length - 1;
    assert.equal(n, 1, `one membus context block after the commit, got ${n}`);
  }

  // A session of two turns that simply stops: the idle commit makes it memory.
  const s3 = `s3-${Date.now()}`;
  await turn(s3, "I live in Lisbon.", "s3-0");
  await turn(s3, "My sister is called Marta.", "s3-1");
  // The README's Verify step: what membus holds of an OpenClaw session.
  const s3Status = async () => {
    const r = await openclaw(["membus", "status", "--session-id", s3, "--session-key", `agent:main:explicit:${s3}`, "--json"]);
    ok(r, "openclaw membus status --session-id");
    return JSON.parse(r.stdout).session;
  };
  const live = await s3Status();
  assert.equal(live.found, true, JSON.stringify(live));
  assert.equal(live.storageId, sha(`agent:main:explicit:${s3}`));
  assert.equal(live.messageCount, 4, JSON.stringify(live));
  await eventually(async () => /Lisbon/.test(await memoriesText()), 180_000, `the idle commit (${IDLE_COMMIT}) commits the stopped session`);
  const idle = await s3Status();
  assert.equal(idle.commitCount, 1, `committed once: ${JSON.stringify(idle)}`);
  t.diagnostic(`session 3 before the idle commit: ${live.messageCount} messages, ${live.commitCount} commits; after: ${idle.commitCount} commit, memories ${JSON.stringify(idle.memories)}`);
  const s4 = `s4-${Date.now()}`;
  await turn(s4, "Which city do I live in?", "s4-0");
  for (const r of requestsOf("s4-0")) {
    const blocks = blocksOf(r.body);
    assert.equal(blocks.length, 1);
    assert.match(blocks[0], /Lisbon/);
  }
  for (const r of fake.requests) {
    const json = JSON.stringify(r.body.messages);
    assert.ok(json.split("<relevant-memories>").length <= 2, `${r.step}: a recall block twice in one request`);
    assert.ok(json.split("<membus-context>").length <= 2, `${r.step}: a context block twice in one request`);
  }
  t.diagnostic(`model requests recorded: ${fake.requests.length}; session 2's block: ${blocksOf(requestsOf("s2-2")[0].body)[0]?.replace(/\s+/g, " ").slice(0, 300)}`);
});
