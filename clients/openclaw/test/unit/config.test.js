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
  assert.equal(resolveConfig({}, { MEMBUS_API_KEY: "mbk_k" }).config.apiKey, "mbk_k");
  assert.equal(resolveConfig({ apiKey: "${MY_KEY}" }, { MY_KEY: "mbk_ref" }).config.apiKey, "mbk_ref", "an environment reference");
});

test("bad values fall back to the default and are reported, never thrown", () => {
  const { config, problems } = resolveConfig({ account: "Bad Account", recallLimit: 0, autoRecall: "yes", timeouts: { recallMs: -1 } }, {});
  assert.equal(config.account, "default");
  assert.equal(config.recallLimit, 6);
  assert.equal(config.autoRecall, true);
  assert.equal(config.timeouts.recallMs, 1500);
  assert.equal(problems.length, 4);
});

test("bypass patterns match the session key (else the id) in OpenViking's glob dialect", () => {
  const cases = [
    ["* stays inside one segment", { sessionKey: "agent:main:cron:nightly" }, ["agent:*:cron"], false],
    ["** spans segments", { sessionKey: "agent:main:cron:nightly:run:1" }, ["agent:*:cron:**"], true],
    ["* matches one whole segment", { sessionKey: "agent:coder:main" }, ["agent:*:main"], true],
    ["the key wins over the id", { sessionKey: "agent:main:main", sessionId: "cron-1" }, ["cron-*"], false],
    ["no key: the id is matched", { sessionId: "cron-123" }, ["cron-*"], true],
    ["no key, other id", { sessionId: "chat-1" }, ["cron-*"], false],
    ["? is one character", { sessionId: "a.b" }, ["a?b"], true],
    ["regex characters are literal", { sessionId: "axxb" }, ["a.b"], false],
    ["no patterns", { sessionKey: "agent:main:main" }, [], false],
    ["no key and no id", {}, ["**"], false],
  ];
  for (const [name, ref, patterns, want] of cases) assert.equal(bypassed(ref, patterns), want, name);
});

test("an unresolved ${VAR} reference counts as unset and says which variable", () => {
  const { config, problems } = resolveConfig({ token: "${MEMBUS_TOKEN_X}" }, {});
  assert.equal(config.token, undefined);
  assert.match(problems.join("\n"), /MEMBUS_TOKEN_X is not set/);
  const set = resolveConfig({ token: "${MEMBUS_TOKEN_X}" }, { MEMBUS_TOKEN_X: "s3cret" });
  assert.equal(set.config.token, "s3cret");
  assert.deepEqual(set.problems, []);
});
