// Test doubles: a fake transport (records publishes, answers RPCs from handlers) and a fake
// OpenClaw plugin api that captures registrations.
import { MembusError } from "../../src/transport.js";

export function fakeTransport(handlers = {}) {
  const published = [];
  const requests = [];
  const seen = new Set();
  let down = false;
  return {
    published,
    requests,
    setDown(v) { down = v; },
    async publish(subject, payload, msgId) {
      if (down) throw new MembusError("unavailable", "connect nats://x: connection refused");
      const duplicate = seen.has(msgId);
      seen.add(msgId);
      published.push({ subject, payload: structuredClone(payload), msgId, duplicate });
      return { seq: published.length, duplicate };
    },
    async request(op, body, timeoutMs) {
      requests.push({ op, body: structuredClone(body), timeoutMs });
      if (down) throw new MembusError("unavailable", "connect nats://x: connection refused");
      const h = handlers[op];
      if (!h) throw new MembusError("unavailable", `rpc ${op}: no responders (is membus running?)`);
      return h(body);
    },
    async close() {},
  };
}

export function fakeApi(pluginConfig = {}, registrationMode = "full") {
  const engines = new Map();
  const tools = [];
  const logs = [];
  const disposers = [];
  const hooks = new Map();
  const clis = [];
  return {
    engines, tools, logs, disposers, hooks, clis,
    id: "membus",
    registrationMode,
    pluginConfig,
    on(name, handler) { hooks.set(name, handler); },
    registerCli(registrar, opts) { clis.push({ registrar, opts }); },
    logger: {
      info: (m) => logs.push(["info", m]),
      warn: (m) => logs.push(["warn", m]),
      error: (m) => logs.push(["error", m]),
      debug: (m) => logs.push(["debug", m]),
    },
    registerContextEngine(id, factory) { engines.set(id, factory); },
    registerTool(tool, opts) { tools.push({ tool, opts }); },
    lifecycle: { onDispose: (fn) => { disposers.push(fn); return () => {}; } },
  };
}

export const user = (text, ts = 1_700_000_000_000) => ({ role: "user", content: text, timestamp: ts });
export const assistant = (text, ts = 1_700_000_000_500) => ({
  role: "assistant", content: [{ type: "text", text }], api: "openai-completions", provider: "stub", model: "stub",
  usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
  stopReason: "stop", timestamp: ts,
});
