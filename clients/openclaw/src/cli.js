// `openclaw membus setup` and `openclaw membus status`: the plugin's own CLI commands, registered
// through OpenClaw's api.registerCli (commander). setup writes the plugin's config entry, takes
// the context-engine slot, turns memory-core's memory slot off, and checks the connection;
// status reports the resolved config and whether membus answers.
import { readFileSync } from "node:fs";
import { resolveConfig } from "./config.js";
import { openClawSessionId } from "./ids.js";
import { createNatsTransport } from "./transport.js";

/** Session id of the status probe: membus answers not_found for it, which proves the round trip. */
const PROBE_SESSION = "membus-status-probe";

/**
 * @param {{ program: any, config?: any, api: any, env: Record<string, string | undefined>,
 *   out?: (s: string) => void, err?: (s: string) => void, transportFor?: (c: any) => any }} ctx
 */
export function registerMembusCli(ctx) {
  const out = ctx.out ?? ((/** @type {string} */ s) => process.stdout.write(s));
  const err = ctx.err ?? ((/** @type {string} */ s) => process.stderr.write(s));
  const root = ctx.program.command("membus").description("Set up and check the membus memory engine");

  root.command("status")
    .description("Show the membus plugin's configuration and check that membus answers")
    .option("--json", "print JSON")
    .option("--session-id <id>", "also show what membus holds of this OpenClaw session (`openclaw sessions --json` lists ids and keys)")
    .option("--session-key <key>", "the session's key, with --session-id")
    .action(async (/** @type {any} */ opts) => {
      const session = opts.sessionId ? { sessionId: String(opts.sessionId), sessionKey: opts.sessionKey ? String(opts.sessionKey) : undefined } : undefined;
      const report = await status(ctx.api?.runtime?.config?.current?.() ?? ctx.config ?? {}, ctx.env, ctx.transportFor, undefined, session);
      if (opts.json) out(JSON.stringify(report, null, 2) + "\n");
      else out(formatStatus(report));
      if (!report.ok) process.exitCode = 1;
    });

  root.command("setup")
    .description("Write the membus plugin config, select it as the context engine and check the connection")
    .option("--nats-url <url>", "membus NATS URL (membus up prints it)", "nats://127.0.0.1:4222")
    .option("--nats-tls-ca <file>", "PEM CA bundle trusted for NATS over TLS (membus up with --tls-cert prints it)")
    .option("--api-key <key>", "membus API key (admin role, of --account), or an environment reference such as '${MEMBUS_API_KEY}'")
    .option("--token <token>", "NATS token of a membus in token mode (development only), or an environment reference such as '${MEMBUS_NATS_TOKEN}'")
    .option("--token-file <path>", "read the token from this file (membus up keeps it in <data dir>/nats.token)")
    .option("--account <account>", "membus account (tenant)")
    .option("--user <user>", "membus user the memories belong to")
    .option("--subject-prefix <prefix>", "membus subject prefix")
    .option("--keep-memory-core", "leave OpenClaw's built-in memory plugin (memory-core) on beside membus")
    .option("--no-check", "write the config without checking the connection")
    .option("--json", "print the result as JSON")
    .action(async (/** @type {any} */ opts) => {
      try {
        const entry = setupEntry(opts);
        const runtimeConfig = ctx.api?.runtime?.config;
        if (typeof runtimeConfig?.mutateConfigFile !== "function") {
          throw new Error("this OpenClaw cannot write its config from a plugin command; set plugins.entries.membus.config by hand (see the plugin README)");
        }
        await runtimeConfig.mutateConfigFile({
          afterWrite: { mode: "auto" },
          mutate: (/** @type {any} */ draft) => applySetup(draft, entry, { keepMemoryCore: Boolean(opts.keepMemoryCore) }),
        });
        const written = runtimeConfig.current?.() ?? {};
        const report = opts.check === false ? null : await status(written, ctx.env, ctx.transportFor, entry);
        const result = { ok: report ? report.ok : true, written: redactEntry(entry), memorySlot: opts.keepMemoryCore ? "unchanged" : "none", status: report };
        if (opts.json) out(JSON.stringify(result, null, 2) + "\n");
        else {
          out(`membus: wrote plugins.entries.membus (natsUrl ${entry.natsUrl}, account ${entry.account ?? "default"}, user ${entry.user ?? "default"})\n`);
          out(`membus: plugins.slots.contextEngine = "membus"${opts.keepMemoryCore ? "" : `, plugins.slots.memory = "none" (memory-core off: membus is the memory)`}\n`);
          if (report) out(formatStatus(report));
          if (report && !report.ok) out("membus: the config is written, but membus did not answer: fix what is said above (is `membus up` running? is the key's or token's variable set where OpenClaw runs?), then run `openclaw membus status`.\n");
        }
        if (report && !report.ok) process.exitCode = 1;
      } catch (e) {
        err(`membus setup: ${e instanceof Error ? e.message : String(e)}\n`);
        process.exitCode = 2;
      }
    });
}

/**
 * The plugin config entry setup writes.
 * @param {any} opts @returns {Record<string, string>}
 */
export function setupEntry(opts) {
  /** @type {Record<string, string>} */
  const entry = { natsUrl: String(opts.natsUrl ?? "nats://127.0.0.1:4222") };
  if (opts.token && opts.tokenFile) throw new Error("give --token or --token-file, not both");
  if (opts.apiKey && (opts.token || opts.tokenFile)) throw new Error("give --api-key or a token, not both");
  if (opts.apiKey) entry.apiKey = String(opts.apiKey);
  if (opts.token) entry.token = String(opts.token);
  if (opts.tokenFile) {
    let tok;
    try {
      tok = readFileSync(String(opts.tokenFile), "utf8").trim();
    } catch (e) {
      throw new Error(`read --token-file: ${e instanceof Error ? e.message : String(e)}`);
    }
    if (!tok) throw new Error(`--token-file ${opts.tokenFile} is empty`);
    entry.token = tok;
  }
  for (const [opt, key] of [["account", "account"], ["user", "user"], ["subjectPrefix", "subjectPrefix"], ["natsTlsCa", "natsTlsCa"]]) {
    if (opts[opt]) entry[key] = String(opts[opt]);
  }
  // A ${VAR} reference is written as given: OpenClaw substitutes it when it loads its config.
  const problems = resolveConfig(entry, {}).problems.filter((p) => !/environment variable/.test(p));
  if (problems.length) throw new Error(problems.join("; "));
  return entry;
}

/**
 * Applies setup to an OpenClaw config draft: the plugin entry (enabled, config merged over what
 * was there), the context-engine slot, and the memory slot off unless memory-core is kept.
 * @param {any} draft @param {Record<string, string>} entry @param {{ keepMemoryCore: boolean }} opts
 */
export function applySetup(draft, entry, opts) {
  draft.plugins ??= {};
  draft.plugins.entries ??= {};
  const cur = draft.plugins.entries.membus ?? {};
  draft.plugins.entries.membus = { ...cur, enabled: true, config: { ...(cur.config ?? {}), ...entry } };
  draft.plugins.slots ??= {};
  draft.plugins.slots.contextEngine = "membus";
  // With membus as the context engine OpenClaw already drops memory-core's "run memory_search"
  // prompt section, but its tools stay; turning the slot off leaves one memory, not two.
  if (!opts.keepMemoryCore) draft.plugins.slots.memory = "none";
  return draft;
}

/** @param {Record<string, string>} entry */
function redactEntry(entry) {
  const e = { ...entry };
  for (const k of ["token", "apiKey"]) {
    if (e[k] && !/^\$\{[A-Z0-9_]+\}$/.test(e[k])) e[k] = "<set>";
  }
  return e;
}

/**
 * @typedef {object} StatusReport
 * @property {boolean} ok membus answered
 * @property {string} natsUrl
 * @property {string} auth apiKey | token | credentials | user | none
 * @property {string} tls off | system roots | the CA file's path
 * @property {string} account
 * @property {string} user
 * @property {string} subjectPrefix
 * @property {string | null} contextEngineSlot
 * @property {string | null} memorySlot
 * @property {boolean} enabled
 * @property {number} [latencyMs] round trip of the probe RPC
 * @property {string} [error]
 * @property {string[]} problems config problems (defaults used)
 * @property {{ sessionId: string, sessionKey?: string, storageId: string, found: boolean, messageCount?: number,
 *   pendingTokens?: number, commitCount?: number, memories?: Record<string, number>, error?: string }} [session]
 */

/**
 * Resolves the plugin's config from an OpenClaw config and probes membus with one RPC.
 * @param {any} ocConfig @param {Record<string, string | undefined>} env
 * @param {((c: any) => any) | undefined} transportFor @param {Record<string, string>} [override]
 * @param {{ sessionId: string, sessionKey?: string }} [session] an OpenClaw session to look up
 * @returns {Promise<StatusReport>}
 */
export async function status(ocConfig, env, transportFor, override, session) {
  const entry = ocConfig?.plugins?.entries?.membus;
  const { config, problems } = resolveConfig({ ...(entry?.config ?? {}), ...(override ?? {}) }, env);
  /** @type {StatusReport} */
  const report = {
    ok: false,
    natsUrl: config.natsUrl,
    auth: config.apiKey ? "apiKey" : config.credentials ? "credentials" : config.token ? "token" : config.natsUser ? "user" : "none",
    tls: config.natsTlsCa ?? (/(^|,)\s*tls:\/\//.test(config.natsUrl) ? "system roots" : "off"),
    account: config.account,
    user: config.user,
    subjectPrefix: config.subjectPrefix,
    contextEngineSlot: ocConfig?.plugins?.slots?.contextEngine ?? null,
    memorySlot: ocConfig?.plugins?.slots?.memory === undefined ? null : String(ocConfig.plugins.slots.memory),
    enabled: entry?.enabled !== false,
    problems,
  };
  const silent = { info() {}, warn() {} };
  const transport = transportFor ? transportFor(config) : createNatsTransport(config, silent);
  const t0 = Date.now();
  try {
    await transport.request("session.get", { v: 1, user_id: config.user, session_id: PROBE_SESSION }, config.timeouts.connectMs + config.timeouts.contextMs);
    report.ok = true;
  } catch (e) {
    const code = /** @type {any} */ (e)?.code;
    if (code === "not_found") report.ok = true; // the recall service answered
    else report.error = e instanceof Error ? e.message : String(e);
  }
  report.latencyMs = Date.now() - t0;
  if (session && report.ok) {
    const storageId = openClawSessionId(session.sessionId, session.sessionKey);
    report.session = { ...session, storageId, found: false };
    try {
      const r = await transport.request("session.get", { v: 1, user_id: config.user, session_id: storageId }, config.timeouts.contextMs);
      Object.assign(report.session, { found: true, messageCount: r?.message_count, pendingTokens: r?.pending_tokens, commitCount: r?.commit_count, memories: r?.memories ?? {} });
    } catch (e) {
      if (/** @type {any} */ (e)?.code !== "not_found") report.session.error = e instanceof Error ? e.message : String(e);
    }
  }
  await transport.close().catch(() => {});
  return report;
}

/** @param {StatusReport} r @returns {string} */
export function formatStatus(r) {
  const lines = [
    `membus:   ${r.ok ? `reachable (${r.latencyMs} ms)` : `NOT reachable: ${r.error}`}`,
    `  NATS:   ${r.natsUrl} (auth: ${r.auth}, TLS: ${r.tls})`,
    `  tenant: account ${r.account}, user ${r.user}, subject prefix ${r.subjectPrefix}`,
    `  slots:  contextEngine ${r.contextEngineSlot ?? "(default)"}${r.contextEngineSlot === "membus" ? "" : " — run `openclaw membus setup` to select membus"}, memory ${r.memorySlot ?? "(default: memory-core)"}`,
  ];
  if (r.session) {
    const x = r.session;
    lines.push(x.found
      ? `  session ${x.sessionId}: membus id ${x.storageId}, ${x.messageCount} messages, ${x.pendingTokens} pending tokens, ${x.commitCount} commits, memories ${JSON.stringify(x.memories)}`
      : `  session ${x.sessionId}: membus id ${x.storageId}, ${x.error ? `lookup failed: ${x.error}` : "not seen by membus yet"}`);
  }
  for (const p of r.problems) lines.push(`  config: ${p}`);
  return lines.join("\n") + "\n";
}
