// Every tool against a fake transport: request shapes, answers, and "not available".
import { test } from "node:test";
import assert from "node:assert/strict";
import { createPlugin } from "../../src/plugin.js";
import { MembusError } from "../../src/transport.js";
import { createHash } from "node:crypto";
import { fakeApi, fakeTransport } from "./helpers.js";

const sum = (s) => createHash("sha256").update(s).digest("hex");

const MEM = (id, text, score) => ({ id, kind: "memory", scope: "user", category: "fact", text, score, sources: [], created_at: "2026-01-01T00:00:00Z" });

function tools(handlers, ctx = { sessionId: "chat-1", sessionKey: "agent:coder:tg:1", agentId: "coder" }) {
  const transport = fakeTransport(handlers);
  const api = fakeApi({});
  createPlugin({ transport, env: {} }).register(api);
  const get = (name) => api.tools.find((t) => t.opts.name === name).tool(ctx);
  return { transport, get };
}

test("every tool has a name, a description and a JSON Schema object for parameters", () => {
  const { get } = tools({});
  for (const n of ["memory_recall", "memory_store", "memory_forget", "archive_search", "archive_expand", "recall_trace", "memory_summary"]) {
    const t = get(n);
    assert.equal(t.name, n);
    assert.ok(t.description.length > 10);
    assert.equal(t.parameters.type, "object");
    assert.equal(typeof t.execute, "function");
  }
});

test("memory_recall lists items", async () => {
  const { get, transport } = tools({ recall: () => ({ v: 1, items: [MEM("m1", "The user lives in Denver", 0.8)], block: "", degraded: false }) });
  const out = await get("memory_recall").execute("c1", { query: "where do I live", limit: 3 });
  assert.match(out.content[0].text, /\[m1\].*Denver/);
  assert.equal(transport.requests[0].body.limit, 3);
  assert.equal(transport.requests[0].body.agent_id, "coder");
});

test("recall_trace asks for the trace and renders it", async () => {
  const { get, transport } = tools({ recall: () => ({ v: 1, items: [], block: "", degraded: false, trace: [{ id: "m1", scope: "user", score: 0.1, parts: { dense: 0.2, keyword: 0, fused: 0.14, boost: 0 }, kept: false, dropped: "below score threshold" }] }) });
  const out = await get("recall_trace").execute("c1", { query: "x" });
  assert.equal(transport.requests[0].body.trace, true);
  assert.match(out.content[0].text, /dropped: below score threshold/);
});

test("memory_store publishes the fact to the agent's store session and commits synchronously", async () => {
  const { get, transport } = tools({ commit: () => ({ v: 1, ok: true, status: "completed", compacted: true, archive_id: "a", memories: { preference: 1 }, tokens_before: 5, tokens_after: 0 }) });
  const out = await get("memory_store").execute("c1", { text: "I prefer window seats" });
  assert.equal(transport.published.length, 1);
  const ev = transport.published[0].payload;
  // The gateway's storeSession("default", "coder"): one side session per agent and user.
  assert.equal(ev.session_id, "membus-store-coder-9de9b79782167497");
  assert.equal(ev.messages[0].parts[0].text, "I prefer window seats");
  const req = transport.requests[0];
  assert.equal(req.op, "commit");
  assert.equal(req.body.kind, "store");
  assert.equal(req.body.wait, true);
  assert.equal(req.body.keep_recent, 0);
  assert.equal(req.body.session_id, "membus-store-coder-9de9b79782167497");
  assert.match(out.content[0].text, /Stored \(completed\).*preference/);
});

test("memory_forget by id", async () => {
  const { get, transport } = tools({ "memories.forget": (b) => ({ v: 1, items: [MEM(b.memory_id, "old fact")] }) });
  const out = await get("memory_forget").execute("c1", { memory_id: "m9" });
  assert.deepEqual(transport.requests[0], { op: "memories.forget", body: { v: 1, user_id: "default", memory_id: "m9" }, timeoutMs: 10000 });
  assert.match(out.content[0].text, /Forgot \[m9\] old fact/);
});

test("memory_forget by query deletes only a single strong candidate", async (t) => {
  await t.test("one candidate ≥ 0.85 is deleted", async () => {
    const { get, transport } = tools({
      recall: () => ({ v: 1, items: [MEM("m1", "dog named Rex", 0.91), MEM("m2", "cat named Tom", 0.3)], block: "", degraded: false }),
      "memories.forget": (b) => ({ v: 1, items: [MEM(b.memory_id, "dog named Rex")] }),
    });
    const out = await get("memory_forget").execute("c1", { query: "my dog Rex" });
    assert.equal(transport.requests[1].body.memory_id, "m1");
    assert.deepEqual(out.details.deleted, ["m1"]);
  });
  await t.test("two strong candidates are listed, nothing deleted", async () => {
    const { get, transport } = tools({ recall: () => ({ v: 1, items: [MEM("m1", "a", 0.9), MEM("m2", "b", 0.88)], block: "", degraded: false }) });
    const out = await get("memory_forget").execute("c1", { query: "x" });
    assert.equal(transport.requests.length, 1);
    assert.match(out.content[0].text, /Not deleted: several[\s\S]*\[m1\][\s\S]*\[m2\]/);
  });
  await t.test("weak candidates are listed, nothing deleted", async () => {
    const { get, transport } = tools({ recall: () => ({ v: 1, items: [MEM("m1", "a", 0.5)], block: "", degraded: false }) });
    const out = await get("memory_forget").execute("c1", { query: "x" });
    assert.equal(transport.requests.length, 1);
    assert.match(out.content[0].text, /Not deleted: no/);
  });
});

test("archive_search and archive_expand speak contract.Archive*; memory_summary the inferred shape", async () => {
  const { get, transport } = tools({
    "archive.search": () => ({ v: 1, session_id: "x", query: "lisbon", truncated: false, archives: [{ archive_id: "arc-1", from_seq: 1, to_seq: 9, abstract: "Trip", matches: [{ seq: 4, message_id: "m4", role: "user", lines: ["we flew to Lisbon"] }] }] }),
    "archive.expand": () => ({ v: 1, archive_id: "arc-1", session_id: "x", from_seq: 1, to_seq: 9, abstract: "Trip", messages: [{ seq: 4, message_id: "m4", role: "user", content: "we flew to Lisbon", created_at: "2026-01-01T00:00:00Z" }] }),
    summary: () => ({ v: 1, period: "week", text: "A week of trip planning." }),
  });
  const s = await get("archive_search").execute("c1", { query: "lisbon" });
  assert.equal(s.content[0].text, "archive arc-1 (messages 1–9): Trip\n  #4 user: we flew to Lisbon");
  assert.deepEqual(transport.requests[0].body, { v: 1, user_id: "default", session_id: sum("agent:coder:tg:1"), query: "lisbon", limit: 20 });
  const e = await get("archive_expand").execute("c1", { archive_id: "arc-1" });
  assert.equal(e.content[0].text, "archive arc-1 (messages 1–9): Trip\n#4 user: we flew to Lisbon");
  assert.deepEqual(transport.requests[1].body, { v: 1, user_id: "default", archive_id: "arc-1" });
  const m = await get("memory_summary").execute("c1", { period: "week", date: "2026-03-02" });
  assert.equal(m.content[0].text, "A week of trip planning.");
  assert.deepEqual(transport.requests[2].body, { v: 1, user_id: "default", agent_id: "coder", period: "week", date: "2026-03-02" });
});

test("archive and summary tools answer 'not available' when no service responds", async () => {
  const { get } = tools({});
  for (const [n, p] of [["archive_search", { query: "x" }], ["archive_expand", { archive_id: "a" }], ["memory_summary", {}]]) {
    const out = await get(n).execute("c1", p);
    assert.match(out.content[0].text, new RegExp(`^${n} is not available`), n);
    assert.equal(out.details.code, "not_available");
  }
});

test("server errors become answers, not throws", async () => {
  const { get } = tools({ "memories.forget": () => { throw new MembusError("not_found", "rpc memories.forget: memory not found"); } });
  const out = await get("memory_forget").execute("c1", { memory_id: "nope" });
  assert.match(out.content[0].text, /^Not found/);
});

test("memory_summary without a date asks for today and says when no digest exists yet", async () => {
  const { get, transport } = tools({
    summary: () => { throw new MembusError("not_found", "rpc summary: no day digest for 2026-12-01 yet (a digest is built by the scheduled job after its period ends): not found"); },
  });
  const m = await get("memory_summary").execute("c1", {});
  assert.equal(transport.requests[0].body.date, undefined, "the server picks today in its time zone");
  assert.equal(transport.requests[0].body.period, "day");
  assert.match(m.content[0].text, /^No day digest for 2026-12-01 yet \(a digest is built by the scheduled job after its period ends\)\. Use memory_recall/);
  assert.equal(m.details.code, "no_digest");
});
