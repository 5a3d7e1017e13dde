import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { DEFAULTS, bypassed, resolveConfig } from "../../src/config.js";

test("defaults are the reference design's", () => {
  const { config, problems } = resolveConfig(undefined, {});
  assert.deepEqual(problems, []);
  assert.equal(config.natsUrl, "nats://127.0.0.1:4222");
  assert.equal(config.autoCapture, true);
  assert.equal(config.autoRecall, true);
  assert.equal(config.commitTokenThreshold, 20000);
  assert.equal(config.commitKeepRecentCount, 10);
  assert.equal(config.recallLimit, 6);
  assert.equal(config.recallScoreThreshold, 0.15);
  assert.equal(config.recallMaxInjectedChars, 4000);
  assert.equal(config.recallPreferAbstract, false);
  assert.deepEqual(config.bypassSessionPatterns, []);
});

test("the manifest's schema defaults agree with the code", () => {
  const manifest = JSON.parse(readFileSync(new URL("../../openclaw.plugin.json", import.meta.url), "utf8"));
  const props = manifest.configSchema.properties;
  for (const [k, v] of Object.entries(props)) {
    if (!("default" in v)) continue;
    const key = k === "agent_prefix" ? "agentPrefix" : k;
    assert.deepEqual(v.default, DEFAULTS[key], k);
  }
  for (const [k, v] of Object.entries(props.timeouts.properties)) assert.equal(v.default, DEFAULTS.timeouts[k], `timeouts.${k}`);
  assert.deepEqual(manifest.contracts.tools.slice().sort(), ["archive_expand", "archive_search", "memory_forget", "memory_recall", "memory_store", "memory_summary", "recall_trace"]);
  assert.equal(manifest.kind, "context-engine");
  assert.equal(manifest.id, "membus");
});

test("config wins over env, env over defaults", () => {
  const env = { MEMBUS_NATS_URL: "nats://env:1", MEMBUS_NATS_TOKEN: "tok", MEMBUS_ACCOUNT: "acme" };
  assert.equal(resolveConfig({}, env).config.natsUrl, "nats://env:1");
  assert.equal(resolveConfig({}, env).config.token, "tok");
  assert.equal(resolveConfig({}, env).config.account, "acme");
  assert.equal(resolveConfig({ natsUrl: "nats://cfg:2" }, env).config.natsUrl, "nats://cfg:2");
});

test("bad values fall back to the default and are reported, never thrown", () => {
  const { config, problems } = resolveConfig({ account: "Bad Account", recallLimit: 0, autoRecall: "yes", timeouts: { recallMs: -1 } }, {});
  assert.equal(config.account, "default");
  assert.equal(config.recallLimit, 6);
  assert.equal(config.autoRecall, true);
  assert.equal(config.timeouts.recallMs, 1500);
  assert.equal(problems.length, 4);
});

test("bypass patterns are globs", () => {
  assert.equal(bypassed("cron-123", ["cron-*"]), true);
  assert.equal(bypassed("chat-1", ["cron-*"]), false);
  assert.equal(bypassed("a.b", ["a?b"]), true);
  assert.equal(bypassed("axxb", ["a.b"]), false);
});
