import { test } from "node:test";
import assert from "node:assert/strict";
import { MAX_MESSAGE_BYTES, stripInjected, toEventMessages, truncate } from "../../src/messages.js";
import { assistant, user } from "./helpers.js";

const opts = { maxToolOutputChars: 100, now: () => new Date("2026-01-02T03:04:05Z") };

test("roles and parts map to the TurnEvent schema", () => {
  const msgs = [
    user("hi there"),
    { ...assistant(""), content: [{ type: "thinking", thinking: "hmm" }, { type: "text", text: "calling" }, { type: "toolCall", id: "c1", name: "grep", arguments: { q: "x" } }] },
    { role: "toolResult", toolCallId: "c1", toolName: "grep", content: [{ type: "text", text: "found" }], isError: false, timestamp: 1_700_000_000_900 },
    { role: "custom", content: "ui only" },
  ];
  const out = toEventMessages("s1", msgs, opts);
  assert.equal(out.length, 3);
  assert.deepEqual(out.map((m) => m.role), ["user", "assistant", "tool"]);
  assert.deepEqual(out.map((m) => m.position), [0, 1, 2]);
  assert.deepEqual(out[0].parts, [{ type: "text", text: "hi there" }]);
  assert.deepEqual(out[1].parts, [{ type: "text", text: "calling" }, { type: "tool_call", id: "c1", name: "grep", arguments: '{"q":"x"}' }]);
  assert.deepEqual(out[2].parts, [{ type: "tool_result", tool_call_id: "c1", name: "grep", output: "found" }]);
  assert.equal(out[0].created_at, new Date(1_700_000_000_000).toISOString());
});

test("message ids are stable: OpenClaw's id, else a hash of session, role, timestamp and content", () => {
  const a = toEventMessages("s1", [user("same"), user("same", 5)], opts);
  const b = toEventMessages("s1", [user("same")], opts);
  assert.equal(a[0].message_id, b[0].message_id, "a re-sent message keeps its id");
  assert.notEqual(a[0].message_id, a[1].message_id, "another timestamp is another message");
  assert.notEqual(toEventMessages("s2", [user("same")], opts)[0].message_id, a[0].message_id, "another session");
  assert.equal(toEventMessages("s1", [{ ...user("x"), id: "entry-7" }], opts)[0].message_id, "entry-7");
});

test("oversized tool output is truncated with a visible marker", () => {
  const out = toEventMessages("s1", [{ role: "toolResult", toolCallId: "c", toolName: "cat", content: [{ type: "text", text: "y".repeat(1000) }], isError: true, timestamp: 1 }], opts);
  const o = out[0].parts[0].output;
  assert.ok(o.length <= 100, `kept ${o.length}`);
  assert.match(o, /\[truncated by membus: 100 of 1000 characters kept\]$/);
  assert.equal(out[0].parts[0].is_error, true);
});

test("a huge message stays under the per-message byte limit", () => {
  const out = toEventMessages("s1", [user("é".repeat(400_000))], opts);
  const bytes = Buffer.byteLength(JSON.stringify(out[0].parts));
  assert.ok(bytes <= MAX_MESSAGE_BYTES, `${bytes} bytes`);
  assert.match(out[0].parts[0].text, /truncated by membus/);
});

test("injected blocks are stripped before capture; an empty message is dropped", () => {
  assert.equal(stripInjected("<relevant-memories>\n- x\n</relevant-memories>\n\nreal question"), "real question");
  assert.equal(toEventMessages("s1", [user("<relevant-memories>only</relevant-memories>")], opts).length, 0);
});

test("truncate keeps short text and never splits a surrogate pair", () => {
  assert.equal(truncate("abc", 10), "abc");
  const t = truncate("😀".repeat(100), 80);
  assert.ok(t.length <= 80);
  assert.doesNotMatch(t, /[\ud800-\udbff](?![\udc00-\udfff])/);
});
