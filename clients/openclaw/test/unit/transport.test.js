// The NATS transport's pure parts: the key id that names the reply inboxes, and how a refusal by
// the bus's permissions becomes an error the user can act on.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Codes, classify, keyID } from "../../src/transport.js";

test("keyID reads the id of a membus API key and nothing else", () => {
  for (const [key, want] of [
    ["mbk_0123456789abcdef_" + "ab".repeat(24), "0123456789abcdef"],
    ["mbk_0123456789ABCDEF_ab", null],
    ["mbk_0123456789abcde_ab", null],
    ["0123456789abcdef", null],
    ["", null],
  ]) assert.equal(keyID(key), want, key);
});

test("a permissions violation is forbidden, with what to check", () => {
  const err = Object.assign(new Error("Permissions Violation for Publish to \"membus.rpc.other.recall\""), { name: "PermissionViolationError" });
  const e = classify(err, "rpc recall");
  assert.equal(e.code, Codes.forbidden);
  assert.match(e.message, /account/);
});
