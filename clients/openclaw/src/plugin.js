// Registration, separated from the SDK entry so tests can drive it with a fake plugin api.
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { registerMembusCli } from "./cli.js";
import { resolveConfig } from "./config.js";
import { ENGINE_ID, createEngine } from "./engine.js";
import { createRuntime } from "./runtime.js";
import { createSpool } from "./spool.js";
import { TOOL_NAMES, createTools } from "./tools.js";
import { createNatsTransport } from "./transport.js";

/** session_end reasons after which the conversation is over: its messages become memory now. */
export const COMMIT_ON_END = Object.freeze(["new", "reset", "idle", "daily"]);

/**
 * @param {{ transport?: import("./transport.js").Transport, delegateCompaction?: (p: any) => Promise<any>, env?: Record<string, string | undefined>, spoolDir?: string }} [overrides]
 */
export function createPlugin(overrides = {}) {
  /** @type {import("./runtime.js").Runtime | null} */
  let rt = null;
  return {
    /** @returns {import("./runtime.js").Runtime | null} */
    runtime: () => rt,
    /** @param {any} api the OpenClaw plugin api */
    register(api) {
      const mode = api.registrationMode ?? "full";
      const env = overrides.env ?? process.env;
      // `openclaw membus …`: its descriptors are needed even when only CLI metadata is loaded,
      // where the runtime (and so NATS) is off limits.
      api.registerCli?.((/** @type {any} */ ctx) => registerMembusCli({ ...ctx, api, env }), {
        descriptors: [{
          name: "membus", description: "Set up and check the membus memory engine", hasSubcommands: true,
          // --json output is for machines: OpenClaw keeps its own diagnostics off stdout then.
          machineOutput: (/** @type {{ argv: readonly string[] }} */ p) => p.argv.includes("--json"),
        }],
      });
      if (mode === "cli-metadata" || mode === "setup-only") return;

      const logger = {
        info: (/** @type {string} */ m) => api.logger?.info?.(m),
        warn: (/** @type {string} */ m) => api.logger?.warn?.(m),
        debug: (/** @type {string} */ m) => api.logger?.debug?.(m),
      };
      const { config, problems } = resolveConfig(api.pluginConfig, env);
      for (const p of problems) logger.warn(`membus: config ${p} (using the default)`);
      const transport = overrides.transport ?? createNatsTransport(config, logger); // connects on first use
      // Turns that wait for membus are kept on disk too, in OpenClaw's state dir: a process that
      // exits (every `openclaw agent --local` run does) leaves them to the next one.
      let spool;
      const spoolDir = overrides.spoolDir ?? (mode === "full" ? stateDir(api) : undefined);
      if (spoolDir) spool = createSpool(spoolDir, (what, err) => logger.warn(`membus: ${what} failed: ${err instanceof Error ? err.message : String(err)}`));
      const runtime = createRuntime({ config, transport, logger, spool });
      rt = runtime;
      api.registerContextEngine(ENGINE_ID, () => createEngine(runtime, { delegateCompaction: overrides.delegateCompaction }));
      for (const name of TOOL_NAMES) {
        api.registerTool((/** @type {any} */ ctx) => createTools(runtime, ctx ?? {}).find((t) => t.name === name), { name });
      }
      api.lifecycle?.onDispose?.(() => transport.close());
      if (mode !== "full") return;

      // Every session becomes memory: when the host ends a conversation (/new, /reset, idle or
      // daily rollover), commit what membus holds of it. The hooks are fire-and-forget on the
      // host's side; the commit runs on the server (wait: false). membus's idle commit catches
      // sessions that end without a hook (`openclaw agent --local`, a process that stops).
      api.on?.("session_end", async (/** @type {any} */ ev, /** @type {any} */ ctx) => {
        if (!COMMIT_ON_END.includes(ev?.reason)) return;
        await commitSession(runtime, { sessionId: ev?.sessionId ?? ctx?.sessionId, sessionKey: ev?.sessionKey ?? ctx?.sessionKey, agentId: ctx?.agentId }, `session_end:${ev?.reason}`);
      });
      api.on?.("before_reset", async (/** @type {any} */ _ev, /** @type {any} */ ctx) => {
        await commitSession(runtime, { sessionId: ctx?.sessionId, sessionKey: ctx?.sessionKey, agentId: ctx?.agentId }, "before_reset");
      });
    },
  };
}

/**
 * Commits a session whole (archive + extraction on the server) without waiting for it. Never
 * throws: a failure is logged and counted, and the server's idle commit still catches the session.
 * @param {import("./runtime.js").Runtime} rt
 * @param {{ sessionId?: string, sessionKey?: string, agentId?: string }} ref
 * @param {string} why
 * @returns {Promise<any>} the CommitResult, or null
 */
export async function commitSession(rt, ref, why) {
  try {
    if (!ref.sessionId && !ref.sessionKey) return null;
    const s = rt.sessionRef({ sessionId: ref.sessionId ?? "", sessionKey: ref.sessionKey, agentId: ref.agentId });
    if (rt.skipCapture(s)) return null;
    if (rt.pending.length) await rt.flushPending();
    const res = await rt.rpc("commit", {
      request_id: `end-${randomUUID()}`, user_id: rt.config.user, agent_id: s.agentId, session_id: s.storageId,
      kind: "sync", wait: false, keep_recent: 0,
    }, rt.config.timeouts.commitMs);
    rt.stats.sessionCommits++;
    rt.logger.info(`membus: ${why}: session ${s.storageId} committed (${res?.status ?? "?"})`);
    return res;
  } catch (err) {
    rt.fail(`commit.${why}`, err);
    return null;
  }
}

/** @param {any} api @returns {string | undefined} <OpenClaw state dir>/membus-spool, when the host says where that is */
function stateDir(api) {
  try {
    const dir = api.runtime?.state?.resolveStateDir?.();
    return typeof dir === "string" && dir ? join(dir, "membus-spool") : undefined;
  } catch {
    return undefined;
  }
}
