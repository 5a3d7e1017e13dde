// Turns that wait for membus survive the process: the next process sends them first.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPlugin } from "../../src/plugin.js";
import { createSpool } from "../../src/spool.js";
import { fakeApi, fakeTransport, user } from "./helpers.js";

function start(spoolDir, transport) {
  const api = fakeApi({});
  const plugin = createPlugin({ transport, env: {}, spoolDir });
  plugin.register(api);
  return { engine: api.engines.get("membus")({}), rt: plugin.runtime(), api };
}

test("a turn committed while membus is down is sent by the next process", async () => {
  const dir = mkdtempSync(join(tmpdir(), "membus-spool-"));
  const down = fakeTransport({});
  down.setDown(true);
  const first = start(dir, down);
  for (const k of ["k1", "k2"]) {
    const r = await first.engine.commitTurn({ advancementKey: k, sessionId: "chat-1", admission: {}, terminal: {}, messages: [user(`turn ${k}`)] });
    assert.equal(r.status, "committed");
  }
  assert.equal(first.rt.pending.length, 2);
  assert.equal(readdirSync(dir).filter((n) => n.startsWith("pending-")).length, 1, "the queue is on disk");

  // The process exits; the next one finds the turns and sends them, in order, before its own.
  const up = fakeTransport({});
  const second = start(dir, up);
  assert.equal(second.rt.pending.length, 2);
  await second.engine.commitTurn({ advancementKey: "k3", sessionId: "chat-1", admission: {}, terminal: {}, messages: [user("turn k3")] });
  assert.deepEqual(up.published.map((p) => p.msgId), ["k1", "k2", "k3"]);
  assert.equal(second.rt.pending.length, 0);
  assert.deepEqual(readdirSync(dir), [], "nothing left on disk once sent");

  // A third process finds nothing to send.
  assert.equal(start(dir, fakeTransport({})).rt.pending.length, 0);
});

test("a starting process takes the files of processes that are gone, never a running one's; a broken file is skipped", () => {
  const dir = mkdtempSync(join(tmpdir(), "membus-spool-"));
  const ev = (id) => ({ subject: "membus.turns.default.s", payload: { event_id: id }, msgId: id });
  const gone = [4194301, 4194302, 4194303]; // above Linux's pid_max: never running
  writeFileSync(join(dir, `pending-${gone[0]}-aaaa.json`), JSON.stringify([ev("a1"), ev("a2")]));
  writeFileSync(join(dir, `claimed-${gone[1]}-bbbb.json`), JSON.stringify([ev("b1")])); // died while claiming
  writeFileSync(join(dir, `pending-${gone[2]}-cccc.json`), "{not json");
  writeFileSync(join(dir, `pending-${process.ppid}-dddd.json`), JSON.stringify([ev("live")])); // a running process
  const errors = [];
  const got = createSpool(dir, (what) => errors.push(what)).load();
  assert.deepEqual(got.map((e) => e.msgId).sort(), ["a1", "a2", "b1"]);
  assert.equal(errors.length, 1, "the broken file is reported");
  const left = readdirSync(dir).sort();
  assert.equal(left.length, 2, left.join(", "));
  assert.ok(left.includes(`pending-${process.ppid}-dddd.json`), "a running process keeps its queue");
  assert.ok(left.some((n) => n.startsWith(`pending-${process.pid}-`)), "the taken turns are on disk under this process");
});
