// End to end: the plugin loaded by OpenClaw's real plugin loader (openclaw@2026.9.6), driven
// through the SDK's harness helpers (no model provider is reachable here), against a real
// `membus up` on free loopback ports. Checks what lands in membus over its HTTP API.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import {
  assembleHarnessContextEngine,
  bootstrapHarnessContextEngine,
  compactContextEngineWithSafetyTimeout,
  finalizeHarnessContextEngineTurn,
} from "openclaw/plugin-sdk/agent-harness-runtime";
import { openClawSessionId } from "../../src/ids.js";
import { startMembusUp, stopMembusUp } from "./membus-up.js";

const here = dirname(fileURLToPath(import.meta.url));
const pluginDir = resolve(here, "../..");
const repoRoot = resolve(pluginDir, "../..");
const membusBin = process.env.MEMBUS_BIN || join(repoRoot, "bin/membus");
const skip = !existsSync(membusBin) && (process.env.CI === "true"
  ? assert.fail(`membus binary missing at ${membusBin}: run make build (or set MEMBUS_BIN)`)
  : `membus binary missing at ${membusBin}: run make build (or set MEMBUS_BIN)`);

const SESSION_ID = "chat-integration-1";
const SESSION_KEY = "agent:main:integration:1";
const STORAGE_ID = openClawSessionId(SESSION_ID, SESSION_KEY);
const warn = (m) => process.stderr.write(`[openclaw warn] ${m}\n`);

let membus, dataDir, stateDir, http, devKey, natsUrl, apiKey, registry, engine;

async function startMembus() {
  dataDir = mkdtempSync(join(tmpdir(), "membus-oc-it-"));
  const up = await startMembusUp(membusBin, dataDir, [], [/openclaw membus setup --nats-url (\S+)/, /dev API key[^:]*:\s*(\S+)/]);
  membus = up.proc;
  http = up.http;
  natsUrl = up.matches[0][1];
  devKey = up.matches[1][1];
  // The plugin's bus credential: an admin key of the account (the README's setup line).
  apiKey = execFileSync(membusBin, ["keys", "create", "--data-dir", dataDir, "--account", "default", "--role", "admin", "--name", "openclaw"], { encoding: "utf8" }).trim();
}

async function api(path, init = {}) {
  const r = await fetch(http + path, { ...init, headers: { authorization: `Bearer ${devKey}`, ...(init.headers ?? {}) } });
  const body = r.headers.get("content-type")?.includes("json") ? await r.json() : await r.text();
  return { status: r.status, body };
}

async function eventually(what, fn, timeoutMs = 20000) {
  const t0 = Date.now();
  let last;
  while (Date.now() - t0 < timeoutMs) {
    last = await fn();
    if (last.ok) return last.value;
    await new Promise((r) => setTimeout(r, 150));
  }
  assert.fail(`${what}: not reached in ${timeoutMs} ms (last: ${JSON.stringify(last?.value)})`);
}

/** OpenClaw's real plugin loader: the dist facade "loadPluginRegistryHandle" (src/plugins/loader.ts). */
async function loadWithOpenClaw(config) {
  const dist = join(pluginDir, "node_modules/openclaw/dist");
  const file = readdirSync(dist).find((n) => /^loader-.*\.mjs$/.test(n) && readFileSync(join(dist, n), "utf8").includes("Stable public facade for plugin loading"));
  assert.ok(file, "openclaw's plugin loader facade (dist/loader-*.mjs)");
  const src = readFileSync(join(dist, file), "utf8");
  const exported = Object.fromEntries(/export \{([^}]*)\}/.exec(src)[1].split(",").map((s) => s.trim().split(/\s+as\s+/)));
  const mod = await import(join(dist, file));
  const load = mod[exported.loadPluginRegistryHandle];
  assert.equal(typeof load, "function", "loadPluginRegistryHandle");
  return load({ config, workspaceDir: stateDir, onlyPluginIds: ["membus"] });
}

const msg = (role, text, ts) => role === "user"
  ? { role, content: text, timestamp: ts }
  : { role, content: [{ type: "text", text }], api: "openai-completions", provider: "stub", model: "stub", usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } }, stopReason: "stop", timestamp: ts };

before(async () => {
  if (skip) return;
  await startMembus();
  stateDir = mkdtempSync(join(tmpdir(), "openclaw-state-"));
  process.env.OPENCLAW_STATE_DIR = stateDir;
  registry = await loadWithOpenClaw({
    plugins: {
      load: { paths: [pluginDir] },
      slots: { contextEngine: "membus" },
      entries: { membus: { enabled: true, config: { natsUrl, apiKey, account: "default", user: "default", timeouts: { commitMs: 30000 } } } },
    },
  });
}, { timeout: 90000 });

after(async () => {
  await engine?.dispose?.();
  await stopMembusUp(membus);
  for (const d of [dataDir, stateDir]) if (d) rmSync(d, { recursive: true, force: true });
});

test("OpenClaw's loader loads the plugin: the engine and every tool are registered", { skip }, async () => {
  const plugin = registry.plugins.find((p) => p.id === "membus");
  assert.equal(plugin?.status, "loaded", JSON.stringify(plugin?.error ?? registry.diagnostics));
  assert.ok(registry.contextEngines.has("membus"));
  assert.deepEqual(registry.tools.flatMap((t) => t.names).sort(), ["archive_expand", "archive_search", "memory_forget", "memory_recall", "memory_store", "memory_summary", "recall_trace"]);
  engine = await registry.contextEngines.get("membus").factory({});
  assert.equal(engine.info.id, "membus");
});

test("afterTurn and commitTurn land the turns in membus; a duplicate commitTurn changes nothing", { skip }, async () => {
  await bootstrapHarnessContextEngine({ contextEngine: engine, hadSessionFile: false, sessionId: SESSION_ID, sessionKey: SESSION_KEY, sessionFile: "", warn });
  const t0 = Date.now() - 60000;
  const turn1 = [msg("user", "Hi! I have a dog named Rex.", t0), msg("assistant", "Rex is a great name for a dog.", t0 + 1)];
  const fin = await finalizeHarnessContextEngineTurn({
    contextEngine: engine, promptError: false, aborted: false, yieldAborted: false,
    sessionIdUsed: SESSION_ID, sessionKey: SESSION_KEY, sessionFile: "", messagesSnapshot: turn1, prePromptMessageCount: 0,
    tokenBudget: 64000, warn, runMaintenance: async () => undefined,
  });
  assert.equal(fin.postTurnFinalizationSucceeded, true);
  await eventually("turn 1 stored", async () => {
    const r = await api(`/v1/sessions/${STORAGE_ID}`);
    return { ok: r.status === 200 && r.body.message_count === 2, value: r };
  });

  const turn2 = [msg("user", "I live in Lisbon these days.", t0 + 2), msg("assistant", "Lisbon is lovely.", t0 + 3)];
  const commit = { advancementKey: "it-adv-1", sessionId: SESSION_ID, sessionKey: SESSION_KEY, admission: { agentId: "main" }, terminal: {}, messages: turn2 };
  assert.deepEqual(await engine.commitTurn(commit), { status: "committed" });
  assert.deepEqual(await engine.commitTurn(commit), { status: "duplicate" });
  const fresh = await registry.contextEngines.get("membus").factory({});
  await eventually("turn 2 stored", async () => {
    const r = await api(`/v1/sessions/${STORAGE_ID}`);
    return { ok: r.body.message_count === 4, value: r.body };
  });
  // a re-sent turn (new engine instance, same advancement key) is deduplicated by JetStream and ingest
  assert.deepEqual(await fresh.commitTurn(commit), { status: "duplicate" });
  await new Promise((r) => setTimeout(r, 500));
  assert.equal((await api(`/v1/sessions/${STORAGE_ID}`)).body.message_count, 4);
});

let rexId, rexText;
test("compact commits synchronously: an archive and memories exist", { skip }, async () => {
  const r = await compactContextEngineWithSafetyTimeout(engine, { sessionId: SESSION_ID, sessionKey: SESSION_KEY, force: true, tokenBudget: 64000 }, 60000);
  assert.equal(r.ok, true, JSON.stringify(r));
  assert.equal(r.compacted, true, JSON.stringify(r));
  assert.ok(r.result.details.archiveId, "archive id");
  assert.ok(r.result.tokensBefore > 0);
  const meta = await api(`/v1/sessions/${STORAGE_ID}`);
  assert.ok(meta.body.commit_count >= 1, JSON.stringify(meta.body));
  const list = await api(`/v1/memories?limit=100`);
  assert.equal(list.status, 200);
  const rex = list.body.items.find((m) => /Rex/.test(m.text));
  assert.ok(rex, `a memory about Rex: ${JSON.stringify(list.body.items.map((m) => m.text))}`);
  rexId = rex.id;
  rexText = rex.text;
});

test("a later assemble injects the relevant memory into the latest user message", { skip }, async () => {
  const messages = [msg("user", "Hello again.", Date.now() - 2000), msg("assistant", "Hi!", Date.now() - 1000), msg("user", "What is my dog's name?", Date.now())];
  const r = await assembleHarnessContextEngine({ contextEngine: engine, sessionId: SESSION_ID, sessionKey: SESSION_KEY, messages, tokenBudget: 64000, modelId: "stub" });
  const last = r.messages.at(-1);
  assert.equal(last.role, "user");
  assert.match(last.content, /^<relevant-memories>[\s\S]*Rex[\s\S]*<\/relevant-memories>\n\nWhat is my dog's name\?$/);
  assert.ok(last.content.includes(`] ${rexText}`), `the Rex memory itself is injected:\n${last.content}`);
  assert.equal(r.messages[0].content, "Hello again.", "earlier messages untouched");
});

test("memory_forget removes it: gone from membus and from the next assemble", { skip }, async () => {
  const entry = registry.tools.find((t) => t.names.includes("memory_forget"));
  const tool = entry.factory({ sessionId: SESSION_ID, sessionKey: SESSION_KEY, agentId: "main" });
  const out = await tool.execute("call-1", { memory_id: rexId });
  assert.match(out.content[0].text, /^Forgot/);
  assert.equal((await api(`/v1/memories/${rexId}`)).status, 404);
  const r = await assembleHarnessContextEngine({ contextEngine: engine, sessionId: SESSION_ID, sessionKey: SESSION_KEY, messages: [msg("user", "What is my dog's name?", Date.now())], tokenBudget: 64000, modelId: "stub" });
  // the memory is gone; the archived raw messages (recall's archive scope) may still quote Rex
  const text = r.messages.at(-1).content;
  assert.ok(!text.includes(`] ${rexText}`), `the forgotten memory is not injected again:\n${text}`);
  const recall = await registry.tools.find((t) => t.names.includes("memory_recall")).factory({ sessionId: SESSION_ID, sessionKey: SESSION_KEY, agentId: "main" })
    .execute("call-2", { query: "What is my dog's name?", scopes: ["user", "agent"] });
  assert.ok(!(recall.details.items ?? []).some((it) => it.id === rexId), JSON.stringify(recall.details));
});

test("the memory tools answer through the loader's tool factories", { skip }, async (t) => {
  const get = (n) => registry.tools.find((t) => t.names.includes(n)).factory({ sessionId: SESSION_ID, sessionKey: SESSION_KEY, agentId: "main" });
  const recall = await get("memory_recall").execute("c2", { query: "where do I live" });
  assert.match(recall.content[0].text, /Lisbon/);
  const trace = await get("recall_trace").execute("c3", { query: "where do I live" });
  assert.match(trace.content[0].text, /kept|dropped/);
  const stored = await get("memory_store").execute("c4", { text: "I'm allergic to peanuts." });
  assert.match(stored.content[0].text, /^Stored/, stored.content[0].text);
  // archive.search / archive.expand / summary are being built beside this plugin: where the
  // op is served the answer is checked; where it is not, the tool says "not available"
  const search = await get("archive_search").execute("c5", { query: "rex" });
  if (search.details.code === "not_available") t.diagnostic("archive.search not served by this membus");
  else {
    assert.match(search.content[0].text, /^archive \S+ \(messages 1–\d+\)[\s\S]*#1 user: Hi! I have a dog named Rex\./, search.content[0].text);
    const archiveId = search.details.archives[0].archive_id;
    const expand = await get("archive_expand").execute("c6", { archive_id: archiveId });
    assert.match(expand.content[0].text, /#2 assistant: Rex is a great name for a dog\./, expand.content[0].text);
  }
  const summary = await get("memory_summary").execute("c7", { period: "day" });
  if (summary.details.code === "not_available") t.diagnostic("summary not served by this membus");
  else assert.equal(typeof summary.content[0].text, "string");
});
