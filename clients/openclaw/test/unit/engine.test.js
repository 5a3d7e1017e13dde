// Every engine method against a fake plugin api and a fake transport, plus the real NATS
// transport pointed at a closed port (membus unreachable: passthrough, never a throw).
import { test } from "node:test";
import assert from "node:assert/strict";
import { createPlugin } from "../../src/plugin.js";
import { createHash } from "node:crypto";
import { assistant, fakeApi, fakeTransport, user } from "./helpers.js";

const sum = (s) => createHash("sha256").update(s).digest("hex");
const BLOCK = "<relevant-memories>\n- The user's dog is named Rex.\n</relevant-memories>";

function setup({ handlers = {}, pluginConfig = {}, delegate } = {}) {
  const transport = fakeTransport(handlers);
  const api = fakeApi(pluginConfig);
  const delegated = [];
  const plugin = createPlugin({
    transport, env: {},
    delegateCompaction: delegate ?? (async (p) => { delegated.push(p); return { ok: true, compacted: true, result: { tokensBefore: 9, tokensAfter: 3 } }; }),
  });
  plugin.register(api);
  const engine = api.engines.get("membus")({});
  return { transport, api, engine, plugin, delegated, stats: plugin.runtime().stats };
}

test("registration: the engine, every tool, and a dispose hook", () => {
  const { api, engine } = setup();
  assert.deepEqual([...api.engines.keys()], ["membus"]);
  assert.deepEqual(api.tools.map((t) => t.opts.name).sort(), ["archive_expand", "archive_search", "memory_forget", "memory_recall", "memory_store", "memory_summary", "recall_trace"]);
  assert.equal(api.disposers.length, 1);
  assert.equal(engine.info.id, "membus");
  assert.equal(engine.info.ownsCompaction, true);
  assert.deepEqual(engine.info.transcriptSemantics, { currentTurnFence: "before-current-turn-entry-v1", turnAdvancementIdempotency: "atomic-idempotent-v1" });
  for (const m of ["bootstrap", "ingest", "ingestBatch", "afterTurn", "commitTurn", "assemble", "compact", "dispose"]) assert.equal(typeof engine[m], "function", m);
});

test("afterTurn publishes the turn's new messages as one TurnEvent on the session's subject", async () => {
  const { transport, engine } = setup({ pluginConfig: { commitTokenThreshold: 3000, commitKeepRecentCount: 4 } });
  await engine.afterTurn({
    sessionId: "chat-1", sessionKey: "agent:coder:telegram:1", sessionFile: "", prePromptMessageCount: 1, tokenBudget: 100000,
    sessionTarget: { agentId: "coder" },
    messages: [user("old", 1), user("I live in Boston", 2), assistant("Noted.", 3)],
  });
  assert.equal(transport.published.length, 1);
  const { subject, payload, msgId } = transport.published[0];
  assert.equal(subject, `membus.turns.default.${sum("agent:coder:telegram:1")}`);
  assert.equal(msgId, payload.event_id);
  assert.equal(payload.v, 1);
  assert.equal(payload.source, "openclaw");
  assert.equal(payload.session_id, "chat-1", "the raw id travels; ingest maps it");
  assert.equal(payload.session_key, "agent:coder:telegram:1");
  assert.equal(payload.account_id, "default");
  assert.equal(payload.user_id, "default");
  assert.equal(payload.agent_id, "coder");
  assert.deepEqual(payload.turn, { is_heartbeat: false, commit_token_threshold: 3000, keep_recent: 4, token_budget: 100000 });
  assert.deepEqual(payload.messages.map((m) => [m.role, m.parts[0].text]), [["user", "I live in Boston"], ["assistant", "Noted."]]);
});

test("a retried afterTurn publishes the same event id and message ids (server dedup)", async () => {
  const { transport, engine } = setup();
  const p = { sessionId: "chat-1", sessionFile: "", prePromptMessageCount: 0, messages: [user("hello membus", 1)] };
  await engine.afterTurn(p);
  await engine.afterTurn(p);
  assert.equal(transport.published.length, 2);
  assert.equal(transport.published[0].msgId, transport.published[1].msgId);
  assert.equal(transport.published[1].duplicate, true);
});

test("heartbeats, bypassed sessions and autoCapture=false publish nothing", async () => {
  const { transport, engine } = setup({ pluginConfig: { bypassSessionPatterns: ["cron-*"] } });
  await engine.afterTurn({ sessionId: "chat-1", sessionFile: "", prePromptMessageCount: 0, isHeartbeat: true, messages: [user("ping")] });
  await engine.afterTurn({ sessionId: "cron-7", sessionFile: "", prePromptMessageCount: 0, messages: [user("nightly job")] });
  assert.equal(transport.published.length, 0);
  const off = setup({ pluginConfig: { autoCapture: false } });
  await off.engine.afterTurn({ sessionId: "chat-1", sessionFile: "", prePromptMessageCount: 0, messages: [user("hello")] });
  assert.equal(off.transport.published.length, 0);
});

test("commitTurn: event id = advancementKey; a duplicate commitTurn answers duplicate and publishes nothing new", async () => {
  const { transport, engine } = setup();
  const p = {
    advancementKey: "adv-1", sessionId: "3F2504E0-4F89-11D3-9A0C-0305E82C3301", sessionKey: "agent:main:x",
    admission: { agentId: "main" }, terminal: {}, messages: [user("my cat is Tom"), assistant("Nice.")],
  };
  assert.deepEqual(await engine.commitTurn(p), { status: "committed" });
  assert.deepEqual(await engine.commitTurn(p), { status: "duplicate" });
  assert.equal(transport.published.length, 1);
  assert.equal(transport.published[0].payload.event_id, "adv-1");
  assert.equal(transport.published[0].subject, "membus.turns.default.3f2504e0-4f89-11d3-9a0c-0305e82c3301");
  // a second engine instance (the host re-resolves engines) relies on JetStream's dedup
  const again = await setup({}).engine; // fresh runtime, fresh transport: committed
  assert.deepEqual(await again.commitTurn(p), { status: "committed" });
});

test("once the host commits turns, afterTurn does not publish them again", async () => {
  const { transport, engine } = setup();
  await engine.commitTurn({ advancementKey: "adv-2", sessionId: "chat-9", admission: {}, terminal: {}, messages: [user("fact one")] });
  await engine.afterTurn({ sessionId: "chat-9", sessionFile: "", prePromptMessageCount: 0, messages: [user("fact one")] });
  assert.equal(transport.published.length, 1);
});

test("ingest and ingestBatch publish", async () => {
  const { transport, engine } = setup();
  assert.deepEqual(await engine.ingest({ sessionId: "chat-1", message: user("single message") }), { ingested: true });
  assert.deepEqual(await engine.ingestBatch({ sessionId: "chat-1", messages: [user("a b c"), assistant("d e f")] }), { ingestedCount: 2 });
  assert.deepEqual(await engine.ingest({ sessionId: "chat-1", message: user("beat"), isHeartbeat: true }), { ingested: false });
  assert.equal(transport.published.length, 2);
});

test("assemble (transform call): recall goes into the latest user message, once", async () => {
  const { transport, engine, stats } = setup({ handlers: { recall: () => ({ v: 1, items: [], block: BLOCK, degraded: false }) } });
  const msgs = [user("earlier"), assistant("ok"), user("What is my dog's name?")];
  const r = await engine.assemble({ sessionId: "chat-1", messages: msgs, tokenBudget: 8000 });
  assert.equal(r.messages.length, 3);
  assert.equal(r.messages[2].content, `${BLOCK}\n\nWhat is my dog's name?`);
  assert.equal(msgs[2].content, "What is my dog's name?", "the host's message is not mutated");
  assert.ok(r.estimatedTokens > 0);
  const req = transport.requests[0];
  assert.equal(req.op, "recall");
  assert.equal(req.body.query, "What is my dog's name?");
  assert.equal(req.body.limit, 6);
  assert.equal(req.body.score_threshold, 0.15);
  assert.equal(req.body.max_injected_chars, 4000);
  assert.equal(req.body.agent_id, "main");
  // the marker prevents a second injection
  const again = await engine.assemble({ sessionId: "chat-1", messages: r.messages });
  assert.equal(again.messages[2].content, r.messages[2].content);
  assert.equal(transport.requests.length, 1);
  assert.equal(stats.injected, 1);
});

test("assemble with content parts prepends a text part; short queries skip recall", async () => {
  const { transport, engine } = setup({ handlers: { recall: () => ({ v: 1, items: [], block: BLOCK, degraded: false }) } });
  const r = await engine.assemble({ sessionId: "c", messages: [{ role: "user", content: [{ type: "text", text: "Where do I live?" }], timestamp: 1 }] });
  assert.deepEqual(r.messages[0].content[0], { type: "text", text: BLOCK });
  await engine.assemble({ sessionId: "c", messages: [user("hi")] });
  assert.equal(transport.requests.length, 1);
});

test("assemble (preflight with prompt): the context RPC's summary and archive index lead the newest messages", async () => {
  const ctx = { v: 1, messages: [], summary: "[Session History Summary]\nThe user planned a trip.", archive_index: [{ archive_id: "arc-1", from_seq: 1, to_seq: 40, abstract: "Trip planning" }], system_prompt_addition: "Search the archive first.", estimated_tokens: 50 };
  const { transport, engine } = setup({ handlers: { context: () => ctx } });
  const msgs = [assistant("orphan"), user("q1"), assistant("a1"), user("q2"), assistant("a2")];
  const r = await engine.assemble({ sessionId: "chat-1", messages: msgs, tokenBudget: 50000, prompt: "next question" });
  assert.equal(transport.requests[0].op, "context");
  assert.equal(transport.requests[0].body.token_budget, 50000);
  assert.equal(r.systemPromptAddition, "Search the archive first.");
  assert.equal(r.messages[0].role, "user");
  assert.match(r.messages[0].content, /The user planned a trip\.[\s\S]*arc-1 \(messages 1–40\): Trip planning[\s\S]*q1$/);
  assert.equal(r.messages.length, 4, "the window opens on a user message");
  // nothing archived yet: the host's messages pass through
  const none = setup({ handlers: { context: () => ({ ...ctx, summary: "", archive_index: [], system_prompt_addition: "" }) } });
  const r2 = await none.engine.assemble({ sessionId: "chat-1", messages: msgs, tokenBudget: 50000, prompt: "x" });
  assert.deepEqual(r2.messages, msgs);
});

test("compact: a synchronous commit RPC answered as OpenClaw's CompactResult", async () => {
  const { transport, engine, delegated } = setup({
    handlers: { commit: () => ({ v: 1, ok: true, status: "completed", compacted: true, archive_id: "arc-9", memories: { fact: 2 }, summary: "S", tokens_before: 1200, tokens_after: 80 }) },
  });
  const r = await engine.compact({ sessionId: "chat-1", sessionKey: "", force: true });
  assert.deepEqual(r, { ok: true, compacted: true, result: { tokensBefore: 1200, tokensAfter: 80, summary: "S", details: { status: "completed", archiveId: "arc-9", memories: { fact: 2 } } } });
  const req = transport.requests[0];
  assert.equal(req.op, "commit");
  assert.equal(req.body.kind, "compact");
  assert.equal(req.body.wait, true);
  assert.equal(req.body.session_id, "chat-1");
  assert.match(req.body.request_id, /^compact-/);
  assert.equal(delegated.length, 0);
});

test("compact: skipped commits are not compactions", async () => {
  const { engine } = setup({ handlers: { commit: () => ({ v: 1, ok: true, status: "skipped", reason: "no_messages", compacted: false, memories: {}, tokens_before: 0, tokens_after: 0 }) } });
  const r = await engine.compact({ sessionId: "chat-1", sessionKey: "" });
  assert.equal(r.ok, true);
  assert.equal(r.compacted, false);
  assert.equal(r.reason, "no_messages");
});

test("membus down (fake): every method passes through, compact delegates to the runtime, turns wait in the queue", async () => {
  const { transport, engine, delegated, stats, plugin } = setup();
  transport.setDown(true);
  const msgs = [user("What is my dog's name?")];
  assert.deepEqual((await engine.assemble({ sessionId: "c", messages: msgs })).messages, msgs);
  assert.deepEqual((await engine.assemble({ sessionId: "c", messages: msgs, prompt: "x", tokenBudget: 1000 })).messages, msgs);
  assert.equal(await engine.afterTurn({ sessionId: "c", sessionFile: "", prePromptMessageCount: 0, messages: msgs }), undefined);
  assert.deepEqual(await engine.commitTurn({ advancementKey: "k1", sessionId: "c2", admission: {}, terminal: {}, messages: msgs }), { status: "committed" });
  assert.deepEqual(await engine.bootstrap({ sessionId: "c", sessionFile: "" }), { bootstrapped: false, reason: "membus unreachable" });
  const c = await engine.compact({ sessionId: "c", sessionKey: "" });
  assert.equal(delegated.length, 1);
  assert.equal(c.compacted, true);
  assert.equal(plugin.runtime().pending.length, 2);
  assert.ok(stats.errors.publish >= 2);
  // back up: the next publish flushes the queue first, in order
  transport.setDown(false);
  await engine.dispose();
  assert.equal(plugin.runtime().pending.length, 0);
  assert.deepEqual(transport.published.map((p) => p.payload.session_id), ["c", "c2"]);
});

test("compact: when membus and the runtime both fail, an ok:false result (no throw)", async () => {
  const { transport, engine } = setup({ delegate: async () => { throw new Error("no runtime here"); } });
  transport.setDown(true);
  const r = await engine.compact({ sessionId: "c", sessionKey: "" });
  assert.equal(r.ok, false);
  assert.match(r.reason, /no runtime here/);
});

test("membus unreachable (real NATS client, closed port): no method throws, host data passes through", async () => {
  const api = fakeApi({ natsUrl: "nats://127.0.0.1:9", timeouts: { connectMs: 300 } });
  const plugin = createPlugin({ env: {}, delegateCompaction: async () => ({ ok: true, compacted: false, reason: "delegated" }) });
  plugin.register(api);
  const engine = api.engines.get("membus")({});
  const msgs = [user("Where do I live these days?"), assistant("Let me think.")];
  const t0 = Date.now();
  assert.deepEqual((await engine.assemble({ sessionId: "c", messages: msgs })).messages, msgs);
  assert.deepEqual((await engine.assemble({ sessionId: "c", messages: msgs, prompt: "p", tokenBudget: 9000 })).messages, msgs);
  await engine.afterTurn({ sessionId: "c", sessionFile: "", prePromptMessageCount: 0, messages: msgs });
  assert.deepEqual(await engine.commitTurn({ advancementKey: "k", sessionId: "c", admission: {}, terminal: {}, messages: msgs }), { status: "committed" });
  // accepted into the bounded queue; published when membus is back
  assert.deepEqual(await engine.ingest({ sessionId: "c", message: msgs[0] }), { ingested: true });
  assert.deepEqual(await engine.ingestBatch({ sessionId: "c", messages: msgs }), { ingestedCount: 2 });
  assert.equal(plugin.runtime().pending.length, 4);
  assert.equal((await engine.bootstrap({ sessionId: "c", sessionFile: "" })).bootstrapped, false);
  assert.deepEqual(await engine.compact({ sessionId: "c", sessionKey: "" }), { ok: true, compacted: false, reason: "delegated" });
  await engine.dispose();
  const tool = api.tools.find((t) => t.opts.name === "memory_recall").tool({ sessionId: "c" });
  const out = await tool.execute("call-1", { query: "where do I live" });
  assert.match(out.content[0].text, /not reachable/);
  assert.ok(Date.now() - t0 < 5000, "a down membus is detected fast (fail-fast window after a failed connect)");
  await api.disposers[0]();
});

test("assemble as the embedded runner calls it: one recall per prompt into the system prompt, the context block once", async () => {
  const ctx = { v: 1, messages: [], summary: "The user planned a trip.", archive_index: [], system_prompt_addition: "Search the archive first.", estimated_tokens: 50 };
  const { transport, engine, stats } = setup({ handlers: { context: () => ctx, recall: () => ({ v: 1, items: [], block: BLOCK, degraded: false }) } });
  const history = [user("q1"), assistant("a1")];
  const prompt = "What is my dog's name?";
  // Preflight: the history (the current prompt is not in it) and the prompt.
  const pre = await engine.assemble({ sessionId: "chat-1", sessionKey: "agent:main:main", messages: history, tokenBudget: 50000, prompt });
  assert.equal(pre.systemPromptAddition, `Search the archive first.\n\n${BLOCK}`);
  assert.equal(pre.messages.length, 2);
  assert.match(pre.messages[0].content, /^\[membus context\][\s\S]*The user planned a trip\.[\s\S]*q1$/);
  const recall = transport.requests.find((r) => r.op === "recall");
  assert.equal(recall.body.query, prompt);
  // Tool loop: the host passes the preflight's output back with the same prompt, before every model call.
  for (let i = 0; i < 3; i++) {
    const loop = await engine.assemble({ sessionId: "chat-1", sessionKey: "agent:main:main", messages: pre.messages, tokenBudget: 40000, prompt });
    assert.deepEqual(loop.messages, pre.messages, "the context block is not added a second time");
    assert.equal(loop.messages.filter((m) => String(m.content).includes("[membus context]")).length, 1);
  }
  assert.equal(transport.requests.filter((r) => r.op === "recall").length, 1, "one recall for the turn");
  assert.equal(transport.requests.filter((r) => r.op === "context").length, 1);
  assert.equal(stats.recalls, 1);
  // The next turn (a new prompt) recalls again.
  await engine.assemble({ sessionId: "chat-1", sessionKey: "agent:main:main", messages: history, tokenBudget: 50000, prompt: "And my cat's?" });
  assert.equal(transport.requests.filter((r) => r.op === "recall").length, 2);
});

test("assemble with a prompt: a new conversation gets no old summary; host system-event lines are not the query", async () => {
  const ctx = { v: 1, messages: [], summary: "Old summary.", archive_index: [], system_prompt_addition: "", estimated_tokens: 5 };
  const { transport, engine } = setup({ handlers: { context: () => ctx, recall: () => ({ v: 1, items: [], block: BLOCK, degraded: false }) } });
  const r = await engine.assemble({ sessionId: "chat-1", messages: [], tokenBudget: 50000, prompt: "System: [2026-12-01 10:00] ⚙️ Compacted (1k → 200)\nWhere do I live?" });
  assert.deepEqual(r.messages, []);
  assert.equal(r.systemPromptAddition, BLOCK);
  assert.equal(transport.requests.find((x) => x.op === "recall").body.query, "Where do I live?");
});

test("assemble with a prompt: a failed recall leaves the turn alone (counted), the context still applies", async () => {
  const ctx = { v: 1, messages: [], summary: "", archive_index: [], system_prompt_addition: "Search the archive first.", estimated_tokens: 5 };
  const { engine, stats } = setup({ handlers: { context: () => ctx } });
  const msgs = [user("q1"), assistant("a1")];
  const r = await engine.assemble({ sessionId: "chat-1", messages: msgs, tokenBudget: 50000, prompt: "Where do I live?" });
  assert.deepEqual(r.messages, msgs);
  assert.equal(r.systemPromptAddition, "Search the archive first.");
  assert.equal(stats.errors.recall, 1);
});

test("assemble without a prompt in a tool loop recalls nothing new", async () => {
  const { transport, engine } = setup({ handlers: { recall: () => ({ v: 1, items: [], block: BLOCK, degraded: false }) } });
  const msgs = [user("What is my dog's name?"), { role: "assistant", content: [{ type: "toolCall", id: "t1", name: "memory_recall", arguments: {} }], timestamp: 2 },
    { role: "toolResult", toolCallId: "t1", toolName: "memory_recall", content: [{ type: "text", text: "Rex" }], timestamp: 3 }];
  const r = await engine.assemble({ sessionId: "chat-1", messages: msgs });
  assert.deepEqual(r.messages, msgs);
  assert.equal(transport.requests.length, 0);
});

test("bypassed sessions (by session key): no capture, no recall, no context, compact goes to the runtime", async () => {
  const { transport, engine, delegated } = setup({
    pluginConfig: { bypassSessionPatterns: ["agent:*:cron:**"] },
    handlers: { recall: () => ({ v: 1, items: [], block: BLOCK, degraded: false }), context: () => ({ v: 1, summary: "x", archive_index: [] }) },
  });
  const ref = { sessionId: "run-1", sessionKey: "agent:main:cron:nightly:run:1" };
  const msgs = [user("What is my dog's name?")];
  assert.deepEqual((await engine.assemble({ ...ref, messages: msgs, prompt: "What is my dog's name?" })).messages, msgs);
  assert.deepEqual((await engine.assemble({ ...ref, messages: msgs })).messages, msgs);
  await engine.commitTurn({ ...ref, advancementKey: "k-b", admission: {}, terminal: {}, messages: msgs });
  await engine.compact({ ...ref });
  assert.equal(transport.requests.length, 0);
  assert.equal(transport.published.length, 0);
  assert.equal(delegated.length, 1);
});

test("session_end (new, reset, idle, daily) and before_reset commit the session whole; other reasons do not", async () => {
  const { transport, api, stats } = setup({ handlers: { commit: () => ({ v: 1, ok: true, status: "accepted", compacted: false, memories: {}, tokens_before: 0, tokens_after: 0 }) } });
  const end = api.hooks.get("session_end");
  const reset = api.hooks.get("before_reset");
  assert.equal(typeof end, "function");
  assert.equal(typeof reset, "function");
  for (const reason of ["new", "reset", "idle", "daily"]) {
    await end({ sessionId: "chat-1", sessionKey: "agent:main:main", messageCount: 4, reason }, { agentId: "main", sessionId: "chat-1", sessionKey: "agent:main:main" });
  }
  for (const reason of ["shutdown", "restart", "compaction", "deleted", undefined]) {
    await end({ sessionId: "chat-1", sessionKey: "agent:main:main", messageCount: 4, reason }, {});
  }
  await reset({ reason: "reset" }, { agentId: "main", sessionId: "chat-2", sessionKey: "agent:main:telegram:9" });
  const commits = transport.requests.filter((r) => r.op === "commit");
  assert.equal(commits.length, 5);
  for (const c of commits) {
    assert.equal(c.body.kind, "sync");
    assert.equal(c.body.wait, false);
    assert.equal(c.body.keep_recent, 0);
  }
  assert.equal(commits[0].body.session_id, sum("agent:main:main"));
  assert.equal(commits[4].body.session_id, sum("agent:main:telegram:9"));
  assert.equal(stats.sessionCommits, 5);
});

test("cli-metadata registration: the CLI only (no runtime, no NATS, no engine)", () => {
  const api = fakeApi({}, "cli-metadata");
  const plugin = createPlugin({ env: {} });
  plugin.register(api);
  assert.equal(api.clis.length, 1);
  assert.deepEqual(api.clis[0].opts.descriptors.map((d) => d.name), ["membus"]);
  assert.equal(api.engines.size, 0);
  assert.equal(api.tools.length, 0);
  assert.equal(plugin.runtime(), null);
});
