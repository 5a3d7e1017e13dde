// Registration, separated from the SDK entry so tests can drive it with a fake plugin api.
import { resolveConfig } from "./config.js";
import { ENGINE_ID, createEngine } from "./engine.js";
import { createRuntime } from "./runtime.js";
import { TOOL_NAMES, createTools } from "./tools.js";
import { createNatsTransport } from "./transport.js";

/**
 * @param {{ transport?: import("./transport.js").Transport, delegateCompaction?: (p: any) => Promise<any>, env?: Record<string, string | undefined> }} [overrides]
 */
export function createPlugin(overrides = {}) {
  /** @type {import("./runtime.js").Runtime | null} */
  let rt = null;
  return {
    /** @returns {import("./runtime.js").Runtime | null} */
    runtime: () => rt,
    /** @param {any} api the OpenClaw plugin api */
    register(api) {
      const logger = {
        info: (/** @type {string} */ m) => api.logger?.info?.(m),
        warn: (/** @type {string} */ m) => api.logger?.warn?.(m),
        debug: (/** @type {string} */ m) => api.logger?.debug?.(m),
      };
      const { config, problems } = resolveConfig(api.pluginConfig, overrides.env ?? process.env);
      for (const p of problems) logger.warn(`membus: config ${p} (using the default)`);
      const transport = overrides.transport ?? createNatsTransport(config, logger);
      const runtime = createRuntime({ config, transport, logger });
      rt = runtime;
      api.registerContextEngine(ENGINE_ID, () => createEngine(runtime, { delegateCompaction: overrides.delegateCompaction }));
      for (const name of TOOL_NAMES) {
        api.registerTool((/** @type {any} */ ctx) => createTools(runtime, ctx ?? {}).find((t) => t.name === name), { name });
      }
      api.lifecycle?.onDispose?.(() => transport.close());
    },
  };
}
