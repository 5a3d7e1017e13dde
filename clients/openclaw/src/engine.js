// The membus context engine (OpenClaw ContextEngine). Every method catches its own failures:
// OpenClaw quarantines an engine that throws, so when membus is down or slow the engine logs,
// counts and passes the host's data through unchanged.
import { randomUUID } from "node:crypto";
import { CONTEXT_MARKER, contentText, stripInjected } from "./messages.js";

export const ENGINE_ID = "membus";
const RECALL_MARKER = "<relevant-memories";
const MAX_QUERY_CHARS = 4000;
/** How long a recall answer is reused for the same session and query: the model calls of one
 * turn (tool loops, retries). memory_store and memory_forget clear it. */
const RECALL_CACHE_MS = 60_000;
/** System event lines the host puts in front of a prompt ("System: [ts] ⚙️ Compacted …"). */
const SYSTEM_EVENT_LINE_RE = /^System: \[[^\]]*\].*$/gm;

/**
 * The recall query of a prompt or user message: injected blocks and host system-event lines
 * stripped, at most 4000 characters.
 * @param {string} text @returns {string}
 */
export function cleanQuery(text) {
  return stripInjected(String(text ?? "").replace(SYSTEM_EVENT_LINE_RE, "")).trim().slice(0, MAX_QUERY_CHARS);
}

/** @param {any[]} messages @returns {boolean} true when the newest message is a tool result */
function isToolLoop(messages) {
  const last = messages[messages.length - 1];
  return last?.role === "toolResult" || last?.role === "tool";
}

/** @param {Map<string, { block: string, at: number }>} cache @param {string} key @param {{ block: string, at: number }} v */
function rememberRecall(cache, key, v) {
  cache.delete(key);
  cache.set(key, v);
  while (cache.size > 256) cache.delete(cache.keys().next().value);
}

/** @param {any[]} messages @returns {number} rough token estimate (4 characters a token) */
export function estimateTokens(messages) {
  let chars = 0;
  for (const m of messages) {
    if (typeof m?.content === "string") chars += m.content.length;
    else if (Array.isArray(m?.content)) {
      for (const p of m.content) {
        if (typeof p?.text === "string") chars += p.text.length;
        else if (p?.type === "toolCall") chars += JSON.stringify(p.arguments ?? {}).length + 16;
        else if (p?.type === "thinking" && typeof p.thinking === "string") chars += p.thinking.length;
        else chars += 16;
      }
    }
    chars += 8;
  }
  return Math.ceil(chars / 4);
}

/** @param {any} m @param {string} text @returns {any} a copy of user message m with text in front */
function prependText(m, text) {
  if (typeof m.content === "string") return { ...m, content: `${text}\n\n${m.content}` };
  const content = Array.isArray(m.content) ? m.content : [];
  return { ...m, content: [{ type: "text", text }, ...content] };
}

/** @param {any[]} messages @returns {number} index of the latest user message, or -1 */
function latestUserIndex(messages) {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i]?.role === "user") return i;
  return -1;
}

/**
 * @param {import("./runtime.js").Runtime} rt
 * @param {{ delegateCompaction?: (params: any) => Promise<any> }} [opts]
 */
export function createEngine(rt, opts = {}) {
  const { config, stats } = rt;
  const delegate = opts.delegateCompaction ?? (async (/** @type {any} */ params) => {
    const { delegateCompactionToRuntime } = await import("openclaw/plugin-sdk/core");
    return delegateCompactionToRuntime(params);
  });

  /**
   * The recall block for a query, or "" (nothing relevant, auto-recall off, query too short).
   * One RPC per (session, query) within RECALL_CACHE_MS: the host assembles before every model
   * call of a turn (tool loops, retries) with the same prompt, and recalls once.
   * @param {ReturnType<typeof rt.sessionRef>} s @param {string} rawQuery @returns {Promise<string>}
   */
  async function recallBlock(s, rawQuery) {
    if (!config.autoRecall) return "";
    const query = cleanQuery(rawQuery);
    if (query.length < 5) return "";
    const key = `${s.storageId}\x1f${query}`;
    const hit = rt.recallCache.get(key);
    if (hit && rt.now().getTime() - hit.at < RECALL_CACHE_MS) return hit.block;
    const resp = await rt.rpc("recall", {
      user_id: config.user, agent_id: s.agentId, session_id: s.storageId, query,
      limit: config.recallLimit, score_threshold: config.recallScoreThreshold,
      max_injected_chars: config.recallMaxInjectedChars, prefer_abstract: config.recallPreferAbstract,
    }, config.timeouts.recallMs);
    const block = typeof resp?.block === "string" ? resp.block.trim() : "";
    stats.recalls++;
    if (block) stats.injected++;
    rememberRecall(rt.recallCache, key, { block, at: rt.now().getTime() });
    return block;
  }

  /**
   * Auto-recall where the host assembles without a prompt (runners without durable turns): the
   * block goes in front of the latest user message, once; a tool loop (newest message is a tool
   * result) recalls nothing new.
   * @param {ReturnType<typeof rt.sessionRef>} s @param {any[]} messages @returns {Promise<any[]>}
   */
  async function injectRecall(s, messages) {
    if (!config.autoRecall || isToolLoop(messages)) return messages;
    const i = latestUserIndex(messages);
    if (i < 0) return messages;
    const raw = contentText(messages[i].content);
    if (raw.includes(RECALL_MARKER)) return messages; // injected already (double-injection guard)
    const block = await recallBlock(s, stripInjected(raw));
    if (!block) return messages;
    const out = messages.slice();
    out[i] = prependText(messages[i], block);
    return out;
  }

  /**
   * Full context: membus's summary and archive index in front of the newest host messages that
   * fit the budget. The host transcript stays the truth for recent messages; membus supplies what
   * was archived. Returns null when membus has nothing to add for this session.
   * @param {ReturnType<typeof rt.sessionRef>} s @param {any[]} messages @param {number | undefined} tokenBudget
   * @returns {Promise<{ messages: any[], systemPromptAddition?: string } | null>}
   */
  async function fullContext(s, messages, tokenBudget) {
    const budget = typeof tokenBudget === "number" && tokenBudget > 0 ? Math.floor(tokenBudget) : 128000;
    let ctx;
    try {
      ctx = await rt.rpc("context", { user_id: config.user, agent_id: s.agentId, session_id: s.storageId, token_budget: budget }, config.timeouts.contextMs);
    } catch (err) {
      if (/** @type {any} */ (err)?.code === "not_found") return null; // membus has not seen this session yet
      throw err;
    }
    const summary = typeof ctx?.summary === "string" ? ctx.summary.trim() : "";
    const index = Array.isArray(ctx?.archive_index) ? ctx.archive_index : [];
    const addition = typeof ctx?.system_prompt_addition === "string" && ctx.system_prompt_addition ? ctx.system_prompt_addition : undefined;
    // A new conversation (nothing in the host's history, e.g. after /new, which keeps the
    // session id) starts clean: long-term memories come through recall, not the old summary.
    if ((!summary && !index.length) || !messages.length) return { messages, systemPromptAddition: addition };
    const lines = [CONTEXT_MARKER, "<membus-context>"];
    if (summary) lines.push(summary);
    if (index.length) {
      lines.push("", "Archive index (use archive_search / archive_expand for details):");
      for (const a of index) lines.push(`- ${a.archive_id} (messages ${a.from_seq}–${a.to_seq}): ${a.abstract}`);
    }
    lines.push("</membus-context>");
    const head = lines.join("\n");
    const reserved = Math.max(Math.floor(budget * 0.15), budget >= 40000 ? 20000 : 0);
    let room = budget - reserved - Math.ceil(head.length / 4);
    let start = messages.length;
    while (start > 0) {
      const t = estimateTokens([messages[start - 1]]);
      if (t > room) break;
      room -= t;
      start--;
    }
    while (start < messages.length && messages[start]?.role !== "user") start++; // open on a user turn
    const tail = messages.slice(start);
    if (tail.length && tail[0].role === "user") tail[0] = prependText(tail[0], head);
    else tail.unshift({ role: "user", content: head, timestamp: rt.now().getTime() });
    return { messages: tail, systemPromptAddition: addition };
  }

  /**
   * assemble as OpenClaw's embedded runner calls it: with the turn's prompt, once before the
   * model input is built (preflight: its messages become the history and its
   * systemPromptAddition joins the system prompt for the whole turn) and again before every model
   * call of the tool loop, whose `messages` are the preflight's own output and whose
   * systemPromptAddition is ignored. So: the context block goes into the history once (a history
   * that carries it already is left alone), and the recall block for the prompt goes into the
   * system prompt addition, recalled once per prompt.
   * @param {ReturnType<typeof rt.sessionRef>} s @param {any[]} messages @param {string} prompt @param {number | undefined} tokenBudget
   */
  async function assembleForPrompt(s, messages, prompt, tokenBudget) {
    let out = messages;
    let addition;
    if (!messages.some((m) => contentText(m?.content).includes(CONTEXT_MARKER))) {
      const full = await fullContext(s, messages, tokenBudget);
      if (full) {
        out = full.messages;
        addition = full.systemPromptAddition;
      }
    }
    let block = "";
    try {
      block = await recallBlock(s, prompt);
    } catch (err) {
      rt.fail("recall", err); // the turn goes on without memories
      stats.passthrough++;
    }
    /** @type {any} */
    const res = { messages: out, estimatedTokens: estimateTokens(out) };
    const sys = [addition, block].filter(Boolean).join("\n\n");
    if (sys) res.systemPromptAddition = sys;
    return res;
  }

  /** OpenClaw's own compaction, for sessions membus does not own or cannot reach. @param {any} params @param {string} [why] */
  async function delegateOrFail(params, why = "") {
    try {
      return await delegate(params);
    } catch (derr) {
      rt.fail("compact.delegate", derr);
      return { ok: false, compacted: false, reason: `${why}runtime compaction failed: ${errText(derr)}` };
    }
  }

  /** @type {import("openclaw/plugin-sdk/agent-harness-runtime").HarnessContextEngine} */
  const engine = {
    info: {
      id: ENGINE_ID,
      name: "membus",
      version: "0.1.0",
      ownsCompaction: true,
      transcriptSemantics: {
        currentTurnFence: "before-current-turn-entry-v1",
        turnAdvancementIdempotency: "atomic-idempotent-v1",
      },
    },

    async bootstrap(params) {
      try {
        const s = rt.sessionRef(params);
        if (rt.pending.length) await rt.flushPending();
        // Opens the connection early and checks membus answers; a new session is not found.
        await rt.rpc("session.get", { user_id: config.user, session_id: s.storageId }, config.timeouts.contextMs).catch((err) => {
          if (err?.code !== "not_found") throw err;
        });
        return { bootstrapped: true, importedMessages: 0 };
      } catch (err) {
        rt.fail("bootstrap", err);
        stats.passthrough++;
        return { bootstrapped: false, reason: "membus unreachable" };
      }
    },

    async ingest(params) {
      try {
        const s = rt.sessionRef(params);
        if (params.isHeartbeat || rt.skipCapture(s)) return { ingested: false };
        const r = await rt.publishTurn(s, [params.message], { isHeartbeat: params.isHeartbeat });
        return { ingested: r.messages > 0 && !r.duplicate };
      } catch (err) {
        rt.fail("ingest", err);
        return { ingested: false };
      }
    },

    async ingestBatch(params) {
      try {
        const s = rt.sessionRef(params);
        if (params.isHeartbeat || rt.skipCapture(s)) return { ingestedCount: 0 };
        const r = await rt.publishTurn(s, params.messages ?? [], { isHeartbeat: params.isHeartbeat });
        return { ingestedCount: r.duplicate ? 0 : r.messages };
      } catch (err) {
        rt.fail("ingestBatch", err);
        return { ingestedCount: 0 };
      }
    },

    async afterTurn(params) {
      try {
        const s = rt.sessionRef(params);
        if (params.isHeartbeat || rt.skipCapture(s)) return;
        // Where the host commits turns durably, commitTurn publishes them: once per turn.
        if (rt.commitTurnSessions.has(s.storageId)) return;
        const all = Array.isArray(params.messages) ? params.messages : [];
        const from = Math.min(Math.max(0, params.prePromptMessageCount ?? 0), all.length);
        await rt.publishTurn(s, all.slice(from), { isHeartbeat: params.isHeartbeat, tokenBudget: params.tokenBudget });
      } catch (err) {
        rt.fail("afterTurn", err);
      }
    },

    async commitTurn(params) {
      try {
        const key = String(params.advancementKey ?? "");
        if (key && rt.committedKeys.has(key)) return { status: "duplicate" };
        const s = rt.sessionRef(params);
        rt.commitTurnSessions.add(s.storageId);
        if (params.isHeartbeat || rt.skipCapture(s)) {
          if (key) rt.committedKeys.add(key);
          return { status: "committed" };
        }
        const r = await rt.publishTurn(s, params.messages ?? [], { eventId: key || undefined, isHeartbeat: params.isHeartbeat });
        if (key) remember(rt.committedKeys, key);
        return { status: r.duplicate && r.published > 0 ? "duplicate" : "committed" };
      } catch (err) {
        rt.fail("commitTurn", err);
        return { status: "committed" };
      }
    },

    async assemble(params) {
      const messages = Array.isArray(params.messages) ? params.messages : [];
      try {
        const s = rt.sessionRef(params);
        if (rt.bypassed(s)) return { messages, estimatedTokens: estimateTokens(messages) };
        if (typeof params.prompt === "string" && params.prompt.length > 0) {
          return await assembleForPrompt(s, messages, params.prompt, params.tokenBudget);
        }
        const out = await injectRecall(s, messages);
        return { messages: out, estimatedTokens: estimateTokens(out) };
      } catch (err) {
        rt.fail("assemble", err);
        stats.passthrough++;
        return { messages, estimatedTokens: estimateTokens(messages) };
      }
    },

    async compact(params) {
      const s = rt.sessionRef(params);
      if (rt.bypassed(s)) return delegateOrFail(params); // membus leaves this session to the host
      try {
        if (rt.pending.length) await rt.flushPending();
        const res = await rt.rpc("commit", {
          request_id: `compact-${randomUUID()}`, user_id: config.user, agent_id: s.agentId,
          session_id: s.storageId, kind: "compact", wait: true, timeout_ms: config.timeouts.commitMs,
        }, config.timeouts.commitMs + 2000);
        return toCompactResult(res);
      } catch (err) {
        rt.fail("compact", err);
        stats.passthrough++;
        return delegateOrFail(params, "membus unreachable and ");
      }
    },

    async dispose() {
      try {
        if (rt.pending.length) await rt.flushPending();
      } catch (err) {
        rt.fail("dispose", err);
      }
    },
  };
  return engine;
}

/**
 * OpenClaw's CompactResult from membus's CommitResult (SPEC §11).
 * @param {any} r @returns {any}
 */
export function toCompactResult(r) {
  const ok = Boolean(r?.ok);
  const compacted = Boolean(r?.compacted);
  /** @type {any} */
  const out = {
    ok,
    compacted,
    result: {
      tokensBefore: Number(r?.tokens_before ?? 0),
      tokensAfter: Number(r?.tokens_after ?? 0),
      details: { status: r?.status, archiveId: r?.archive_id, memories: r?.memories ?? {} },
    },
  };
  if (typeof r?.summary === "string" && r.summary) out.result.summary = r.summary;
  if (r?.reason) out.reason = String(r.reason);
  else if (!compacted) out.reason = String(r?.status ?? "not compacted");
  return out;
}

/** @param {Set<string>} set @param {string} key keeps the newest 10000 keys */
function remember(set, key) {
  set.add(key);
  if (set.size > 10000) set.delete(set.values().next().value);
}

/** @param {unknown} e */
function errText(e) {
  return e instanceof Error ? e.message : String(e);
}
