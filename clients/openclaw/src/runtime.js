// Shared plugin state: the transport, counters, the publish path (with a bounded in-memory
// queue while membus is unreachable) and small helpers used by the engine and the tools.
import { bypassed } from "./config.js";
import { msgId, openClawAgentId, openClawSessionId, sessionToken } from "./ids.js";
import { isUnavailable } from "./transport.js";
import { toEventMessages } from "./messages.js";

/** Payload budget of one published event (NATS max payload is 1 MiB by default). */
export const MAX_EVENT_BYTES = 900 * 1024;

/**
 * @typedef {object} SessionRef
 * @property {string} rawId session id as OpenClaw gave it
 * @property {string | undefined} key session key
 * @property {string} storageId membus storage id (SPEC §3)
 * @property {string} eventAgentId sanitised runtime agent id sent in TurnEvents (ingest maps it)
 * @property {string} agentId the agent id membus stores (for RPCs)
 */

/**
 * @typedef {object} Stats
 * @property {number} published events published (acked)
 * @property {number} duplicates events the server already had
 * @property {number} queued events held while membus was unreachable
 * @property {number} dropped queued events dropped (queue full)
 * @property {number} passthrough engine calls answered without membus
 * @property {number} recalls recall RPCs made by auto-recall
 * @property {number} injected recall blocks injected
 * @property {number} sessionCommits sessions committed when the host ended them
 * @property {Record<string, number>} errors failures per operation
 */

/**
 * @param {{ config: import("./config.js").MembusConfig, transport: import("./transport.js").Transport,
 *   logger: { info: (m: string) => void, warn: (m: string) => void, error?: (m: string) => void, debug?: (m: string) => void },
 *   now?: () => Date, spool?: import("./spool.js").Spool }} deps
 */
export function createRuntime(deps) {
  const { config, transport, logger } = deps;
  const now = deps.now ?? (() => new Date());
  /** @type {Stats} */
  const stats = { published: 0, duplicates: 0, queued: 0, dropped: 0, passthrough: 0, recalls: 0, injected: 0, sessionCommits: 0, errors: {} };
  /** @type {Map<string, { block: string, at: number }>} recall answers of recent prompts (see engine.recallBlock) */
  const recallCache = new Map();
  /** @type {import("./spool.js").PendingEvent[]} turns waiting for membus, oldest first (also on disk when a spool is given) */
  const pending = deps.spool ? deps.spool.load() : [];
  if (pending.length) logger.info(`membus: ${pending.length} turns left by an earlier process wait to be sent`);
  const persist = () => deps.spool?.save(pending);
  /** advancement keys committed by this process (idempotence without a round trip) */
  const committedKeys = new Set();
  /** storage ids of sessions whose turns arrive through commitTurn (afterTurn then skips them) */
  const commitTurnSessions = new Set();
  let flushing = null;

  /** @param {string} op @param {unknown} err */
  function fail(op, err) {
    stats.errors[op] = (stats.errors[op] ?? 0) + 1;
    logger.warn(`membus: ${op} failed (${stats.errors[op]}x): ${err instanceof Error ? err.message : String(err)}`);
  }

  /**
   * @param {{ sessionId: string, sessionKey?: string, agentId?: string, sessionTarget?: { agentId?: string }, admission?: { agentId?: string } }} p
   * @returns {SessionRef}
   */
  function sessionRef(p) {
    const runtimeAgent = p.agentId ?? p.sessionTarget?.agentId ?? p.admission?.agentId;
    const key = p.sessionKey || undefined;
    return {
      rawId: String(p.sessionId ?? ""),
      key,
      storageId: openClawSessionId(String(p.sessionId ?? ""), key),
      eventAgentId: openClawAgentId(undefined, runtimeAgent, "").slice(0, 128),
      agentId: openClawAgentId(key, runtimeAgent, config.agentPrefix).slice(0, 128),
    };
  }

  /** @param {SessionRef} s @returns {boolean} true when membus leaves this session alone (bypassSessionPatterns) */
  function isBypassed(s) {
    return bypassed({ sessionKey: s.key, sessionId: s.rawId }, config.bypassSessionPatterns);
  }

  /** @param {SessionRef} s @returns {boolean} true when this session is never captured */
  function skipCapture(s) {
    return !config.autoCapture || !s.rawId || isBypassed(s);
  }

  async function flushPending() {
    if (flushing) return flushing;
    flushing = (async () => {
      try {
        while (pending.length) {
          const e = pending[0];
          const ack = await transport.publish(e.subject, e.payload, e.msgId);
          pending.shift();
          stats.published++;
          if (ack.duplicate) stats.duplicates++;
        }
      } finally {
        persist();
      }
    })().finally(() => { flushing = null; });
    return flushing;
  }

  /**
   * Publishes one turn (split into several events when it would exceed the payload budget).
   * Never throws: while membus is unreachable the events wait in a bounded queue, flushed
   * before the next publish, commit or bootstrap.
   * @param {SessionRef} s
   * @param {any[]} agentMessages
   * @param {{ eventId?: string, isHeartbeat?: boolean, tokenBudget?: number }} opts
   * @returns {Promise<{ published: number, duplicate: boolean, queued: boolean, messages: number }>}
   */
  async function publishTurn(s, agentMessages, opts) {
    const messages = toEventMessages(s.storageId, agentMessages, { maxToolOutputChars: config.maxToolOutputChars, now });
    if (!messages.length) return { published: 0, duplicate: false, queued: false, messages: 0 };
    let baseId = opts.eventId || "oc-" + msgId(config.account, s.storageId, ...messages.map((m) => m.message_id));
    if (baseId.length > 200) baseId = "oc-" + msgId(baseId);
    const subject = `${config.subjectPrefix}.turns.${config.account}.${sessionToken(s.storageId)}`;
    /** @type {Record<string, unknown>} */
    const turn = {
      is_heartbeat: Boolean(opts.isHeartbeat),
      commit_token_threshold: Math.round(config.commitTokenThreshold),
      keep_recent: Math.round(config.commitKeepRecentCount),
    };
    if (typeof opts.tokenBudget === "number" && opts.tokenBudget >= 1) turn.token_budget = Math.floor(opts.tokenBudget);
    const chunks = chunkMessages(messages);
    const sentAt = now().toISOString();
    const events = chunks.map((msgs, i) => {
      /** @type {Record<string, unknown>} */
      const ev = {
        v: 1,
        event_id: i === 0 ? baseId : `${baseId}~${i}`,
        account_id: config.account,
        user_id: config.user,
        agent_id: s.eventAgentId,
        session_id: s.rawId.slice(0, 512),
        source: "openclaw",
        turn,
        messages: msgs.map((m, position) => ({ ...m, position })),
        sent_at: sentAt,
      };
      if (s.key) ev.session_key = s.key;
      return { subject, payload: ev, msgId: /** @type {string} */ (ev.event_id) };
    });
    let published = 0;
    let duplicate = false;
    try {
      if (pending.length) await flushPending();
      for (const e of events) {
        const ack = await transport.publish(e.subject, e.payload, e.msgId);
        stats.published++;
        published++;
        if (ack.duplicate) { stats.duplicates++; duplicate = true; }
      }
      return { published, duplicate, queued: false, messages: messages.length };
    } catch (err) {
      fail("publish", err);
      for (const e of events.slice(published)) enqueue(e);
      persist();
      return { published, duplicate, queued: true, messages: messages.length };
    }
  }

  /** @param {import("./spool.js").PendingEvent} e */
  function enqueue(e) {
    if (config.maxPendingEvents <= 0) { stats.dropped++; return; }
    while (pending.length >= config.maxPendingEvents) { pending.shift(); stats.dropped++; }
    pending.push(e);
    stats.queued++;
  }

  /**
   * One RPC; throws MembusError.
   * @param {string} op @param {Record<string, unknown>} body @param {number} timeoutMs
   */
  async function rpc(op, body, timeoutMs) {
    return transport.request(op, { v: 1, ...body }, timeoutMs);
  }

  return {
    config, transport, logger, stats, pending, committedKeys, commitTurnSessions, now,
    fail, sessionRef, skipCapture, bypassed: isBypassed, publishTurn, flushPending, rpc, isUnavailable, recallCache,
  };
}

/**
 * Splits messages so that each event stays under MAX_EVENT_BYTES.
 * @template T @param {T[]} messages @returns {T[][]}
 */
export function chunkMessages(messages) {
  /** @type {T[][]} */
  const chunks = [];
  /** @type {T[]} */
  let cur = [];
  let size = 0;
  for (const m of messages) {
    const n = Buffer.byteLength(JSON.stringify(m), "utf8");
    if (cur.length && size + n > MAX_EVENT_BYTES) { chunks.push(cur); cur = []; size = 0; }
    cur.push(m);
    size += n;
  }
  if (cur.length) chunks.push(cur);
  return chunks;
}

/** @typedef {ReturnType<typeof createRuntime>} Runtime */
