// Mirrors pkg/contract/openclaw_test.go and pkg/bus/ids.go: the plugin must name the same
// storage id, agent id and subject token as the Go side.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { msgId, openClawAgentId, openClawSessionId, sessionToken } from "../../src/ids.js";

const sum = (s) => createHash("sha256").update(s).digest("hex");

test("openClawSessionId", async (t) => {
  const cases = [
    ["upper-case UUID is lower-cased", "3F2504E0-4F89-11D3-9A0C-0305E82C3301", "agent:main:x", "3f2504e0-4f89-11d3-9a0c-0305e82c3301"],
    ["lower-case UUID is kept", "3f2504e0-4f89-11d3-9a0c-0305e82c3301", "", "3f2504e0-4f89-11d3-9a0c-0305e82c3301"],
    ["a session key wins over a non-UUID id", "chat-42", "agent:main:telegram:42", sum("agent:main:telegram:42")],
    ["Windows-illegal characters are hashed with the prefix", "C:\\chats|a?", "", sum("openclaw-session:C:\\chats|a?")],
    ["a colon alone is illegal", "telegram:42", "", sum("openclaw-session:telegram:42")],
    ["a plain id is kept", "chat-42_b", "", "chat-42_b"],
    ["a UUID-like id with a missing group is not a UUID", "3F2504E0-4F89-11D3-9A0C", "", "3F2504E0-4F89-11D3-9A0C"],
    ["an undefined key is no key", "chat-42", undefined, "chat-42"],
  ];
  for (const [name, id, key, want] of cases) {
    await t.test(name, () => assert.equal(openClawSessionId(id, key), want));
  }
});

test("openClawAgentId", async (t) => {
  const cases = [
    ["agent:<id>:<rest> key gives the id", "agent:coder:telegram:1", "main", "", "coder"],
    ["the runtime id without such a key", "telegram:1", "writer", "", "writer"],
    ["main when nothing is known", "", "", "", "main"],
    ["the prefix is prepended", "agent:coder:x", "", "acme", "acme_coder"],
    ["unsafe characters are replaced", "agent:c.o der:x", "", "", "c_o_der"],
    ["a key that only looks similar is ignored", "agents:coder:x", "rt", "", "rt"],
    ["a run of unsafe characters becomes one underscore", undefined, "a..//b", "", "a_b"],
  ];
  for (const [name, key, runtime, prefix, want] of cases) {
    await t.test(name, () => assert.equal(openClawAgentId(key, runtime, prefix), want));
  }
});

test("sessionToken", async (t) => {
  const long = "x".repeat(65);
  const cases = [
    ["a safe id is its own token", "chat-42_B", "chat-42_B"],
    ["64 safe characters are kept", "a".repeat(64), "a".repeat(64)],
    ["65 characters are hashed", long, sum(long)],
    ["a dot is hashed", "a.b", sum("a.b")],
    ["a storage id that is a sha256 hex is kept", sum("k"), sum("k")],
  ];
  for (const [name, id, want] of cases) await t.test(name, () => assert.equal(sessionToken(id), want));
});

test("msgId joins parts with the unit separator like bus.MsgID", () => {
  assert.equal(msgId("a", "bc"), sum("a\x1fbc"));
  assert.notEqual(msgId("a", "bc"), msgId("ab", "c"));
});
