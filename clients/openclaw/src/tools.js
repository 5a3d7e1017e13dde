// The agent's memory tools. Each is a JSON-Schema-parameterised AgentTool; each answers with
// text (never throws): membus down → a short "not available" answer the model can act on.
import { msgId } from "./ids.js";

const STORE_PREFIX = "membus-store-";

/**
 * The side session memory_store writes to: membus-store-<agent>-<16 hex of the user>, at most
 * 64 characters (services/gateway storeSession).
 * @param {string} user @param {string} agent
 */
export function storeSession(user, agent) {
  const room = 64 - STORE_PREFIX.length - 17;
  return STORE_PREFIX + agent.slice(0, room) + "-" + msgId("store-session", user).slice(0, 16);
}
import { Codes, MembusError, isUnavailable } from "./transport.js";
import { truncate } from "./messages.js";

export const TOOL_NAMES = Object.freeze(["memory_recall", "memory_store", "memory_forget", "archive_search", "archive_expand", "recall_trace", "memory_summary"]);

const FORGET_MIN_SCORE = 0.85;
const MAX_ANSWER_CHARS = 12000;

/** @param {string} text @param {unknown} [details] */
function answer(text, details) {
  return { content: [{ type: "text", text: truncate(text, MAX_ANSWER_CHARS) }], details: details ?? {} };
}

/** @param {any} it @returns {string} */
function itemLine(it) {
  const score = typeof it.score === "number" ? ` score=${it.score.toFixed(2)}` : "";
  const cat = it.category ? ` ${it.category}` : "";
  return `- [${it.id}] (${it.kind ?? "memory"}/${it.scope ?? "?"}${cat}${score}) ${it.text}`;
}

/**
 * @param {import("./runtime.js").Runtime} rt
 * @param {{ sessionId?: string, sessionKey?: string, agentId?: string }} ctx the tool context of the run
 * @returns {any[]} the tools, bound to the run's session and agent
 */
export function createTools(rt, ctx = {}) {
  const { config } = rt;
  const s = rt.sessionRef({ sessionId: ctx.sessionId ?? "", sessionKey: ctx.sessionKey, agentId: ctx.agentId });
  const timeout = config.timeouts.toolMs;

  /**
   * Runs one tool body; maps failures to answers.
   * @param {string} name @param {() => Promise<any>} fn @param {boolean} [optionalOp] the RPC may not exist on this membus
   */
  async function run(name, fn, optionalOp = false) {
    try {
      return await fn();
    } catch (err) {
      rt.fail(`tool.${name}`, err);
      const e = /** @type {any} */ (err);
      if (optionalOp && e instanceof MembusError && e.code === Codes.unavailable) {
        return answer(`${name} is not available: this membus does not serve it or cannot be reached right now.`, { error: e.message, code: "not_available" });
      }
      if (isUnavailable(err)) return answer(`membus is not reachable right now (${e.message}); carry on without long-term memory.`, { error: e.message, code: e.code });
      if (e?.code === Codes.notFound) return answer(`Not found: ${e.message}`, { error: e.message, code: e.code });
      return answer(`${name} failed: ${e?.message ?? String(err)}`, { error: e?.message ?? String(err), code: e?.code ?? "internal" });
    }
  }

  /** @param {string} query @param {Record<string, unknown>} extra */
  const recall = (query, extra) => rt.rpc("recall", {
    user_id: config.user, agent_id: s.agentId, ...(s.rawId ? { session_id: s.storageId } : {}), query,
    limit: config.recallLimit, score_threshold: config.recallScoreThreshold,
    max_injected_chars: config.recallMaxInjectedChars, prefer_abstract: config.recallPreferAbstract, ...extra,
  }, timeout);

  const needSession = () => {
    if (!s.rawId) throw new MembusError(Codes.badRequest, "no current session");
  };

  return [
    {
      name: "memory_recall",
      label: "Recall memories",
      description: "Search long-term memory (facts, preferences, events, decisions about the user and this agent) for what is relevant to a query.",
      parameters: {
        type: "object", additionalProperties: false, required: ["query"],
        properties: {
          query: { type: "string", minLength: 1, description: "What to look for." },
          limit: { type: "integer", minimum: 1, maximum: 50, description: "Most items to return (default from config)." },
          scopes: { type: "array", items: { enum: ["user", "agent", "archive"] }, uniqueItems: true, description: "Where to search (default: user and agent)." },
        },
      },
      execute: async (/** @type {string} */ _id, /** @type {any} */ p) => run("memory_recall", async () => {
        const r = await recall(String(p?.query ?? ""), { ...(p?.limit ? { limit: p.limit } : {}), ...(Array.isArray(p?.scopes) ? { scopes: p.scopes } : {}) });
        const items = Array.isArray(r?.items) ? r.items : [];
        if (!items.length) return answer("No relevant memories found.", { items: [], degraded: Boolean(r?.degraded) });
        return answer(items.map(itemLine).join("\n") + (r?.degraded ? "\n(degraded: keyword search only)" : ""), { items, degraded: Boolean(r?.degraded) });
      }),
    },
    {
      name: "memory_store",
      label: "Store a memory",
      description: "Store a fact the user asked you to remember. It is extracted into long-term memory before this call returns.",
      parameters: {
        type: "object", additionalProperties: false, required: ["text"],
        properties: { text: { type: "string", minLength: 1, maxLength: 8000, description: "The fact, in the user's words (e.g. \"I prefer window seats\")." } },
      },
      execute: async (/** @type {string} */ _id, /** @type {any} */ p) => run("memory_store", async () => {
        const text = String(p?.text ?? "").trim();
        if (!text) return answer("Nothing to store: text is empty.", { error: "empty" });
        // A side session per agent and user keeps the conversation's own archive untouched. A
        // session is one user's, and other OpenClaw hosts of the account may act for other users:
        // the user's hash is part of the id, the same id the gateway's POST /v1/memories uses.
        const store = rt.sessionRef({ sessionId: storeSession(config.user, s.agentId), agentId: s.eventAgentId });
        const at = rt.now();
        const r = await rt.publishTurn(store, [{ role: "user", content: text, timestamp: at.getTime(), id: "store-" + msgId(store.storageId, text, at.toISOString()).slice(0, 32) }], {});
        if (r.queued) return answer("membus is not reachable right now; the memory is queued and will be stored when it is back.", { queued: true });
        rt.recallCache.clear(); // what auto-recall answered earlier in this turn may be stale now
        const res = await rt.rpc("commit", {
          request_id: "store-" + msgId(store.storageId, text, at.toISOString()).slice(0, 40), user_id: config.user, agent_id: s.agentId,
          session_id: store.storageId, kind: "store", wait: true, keep_recent: 0, timeout_ms: timeout,
        }, timeout + 2000);
        const counts = res?.memories ?? {};
        const n = Object.values(counts).reduce((a, b) => a + Number(b || 0), 0);
        return answer(res?.ok ? `Stored (${res.status}); memories by category: ${JSON.stringify(counts)}${n ? "" : " (nothing new: already known?)"}.` : `Store did not complete: ${res?.status} ${res?.reason ?? ""}`, res);
      }),
    },
    {
      name: "memory_forget",
      label: "Forget a memory",
      description: "Delete one long-term memory: by id, or by query when exactly one memory matches it closely (score ≥ 0.85); otherwise lists the candidates so you can pick an id.",
      parameters: {
        type: "object", additionalProperties: false,
        properties: {
          memory_id: { type: "string", description: "Id of the memory to delete (from memory_recall)." },
          query: { type: "string", description: "What the memory says, when the id is unknown." },
        },
      },
      execute: async (/** @type {string} */ _id, /** @type {any} */ p) => run("memory_forget", async () => {
        let id = typeof p?.memory_id === "string" ? p.memory_id.trim() : "";
        if (!id) {
          const query = typeof p?.query === "string" ? p.query.trim() : "";
          if (!query) return answer("Give memory_id or query.", { error: "bad_request" });
          const r = await recall(query, { limit: 5, score_threshold: 0, scopes: ["user", "agent"] });
          const items = (Array.isArray(r?.items) ? r.items : []).filter((/** @type {any} */ it) => it.kind === "memory");
          const strong = items.filter((/** @type {any} */ it) => Number(it.score) >= FORGET_MIN_SCORE);
          if (strong.length !== 1) {
            if (!items.length) return answer("No memory matches that query.", { candidates: [] });
            return answer(`Not deleted: ${strong.length ? "several" : "no"} memories match closely enough (score ≥ ${FORGET_MIN_SCORE}). Candidates:\n${items.map(itemLine).join("\n")}\nCall memory_forget with the memory_id to delete one.`, { candidates: items });
          }
          id = strong[0].id;
        }
        rt.recallCache.clear(); // a forgotten memory is never injected again from an earlier answer
        const res = await rt.rpc("memories.forget", { user_id: config.user, memory_id: id }, timeout);
        const gone = Array.isArray(res?.items) ? res.items : [];
        return answer(`Forgot ${gone.length ? gone.map((/** @type {any} */ it) => `[${it.id}] ${it.text}`).join("; ") : id}.`, { deleted: gone.map((/** @type {any} */ it) => it.id) });
      }),
    },
    {
      name: "archive_search",
      label: "Search the archive",
      description: "Keyword search (case-insensitive) over this conversation's archived messages. Use it before saying something was not mentioned.",
      parameters: {
        type: "object", additionalProperties: false, required: ["query"],
        properties: {
          query: { type: "string", minLength: 1, description: "Words to find." },
          limit: { type: "integer", minimum: 1, maximum: 100, description: "Most matches to return (default 20)." },
        },
      },
      execute: async (/** @type {string} */ _id, /** @type {any} */ p) => run("archive_search", async () => {
        needSession();
        // contract.ArchiveSearchRequest / ArchiveSearchResponse (pkg/contract/archive.go)
        const r = await rt.rpc("archive.search", { user_id: config.user, session_id: s.storageId, query: String(p?.query ?? ""), limit: p?.limit ?? 20 }, timeout);
        const archives = Array.isArray(r?.archives) ? r.archives : [];
        if (!archives.length) return answer("No archived message matches.", r);
        const lines = [];
        for (const a of archives) {
          lines.push(`archive ${a.archive_id} (messages ${a.from_seq}–${a.to_seq})${a.abstract ? `: ${a.abstract}` : ""}`);
          for (const m of Array.isArray(a.matches) ? a.matches : []) {
            for (const l of Array.isArray(m.lines) ? m.lines : []) lines.push(`  #${m.seq} ${m.name || m.role}: ${l}`);
          }
        }
        if (r?.truncated) lines.push("(more matches: narrow the query or raise limit)");
        return answer(lines.join("\n"), r);
      }, true),
    },
    {
      name: "archive_expand",
      label: "Expand an archive",
      description: "Show the messages of one archive of this conversation (ids come from the archive index or archive_search).",
      parameters: {
        type: "object", additionalProperties: false, required: ["archive_id"],
        properties: { archive_id: { type: "string", minLength: 1 } },
      },
      execute: async (/** @type {string} */ _id, /** @type {any} */ p) => run("archive_expand", async () => {
        // contract.ArchiveExpandRequest / ArchiveExpandResponse (pkg/contract/archive.go)
        const r = await rt.rpc("archive.expand", { user_id: config.user, archive_id: String(p?.archive_id ?? "") }, timeout);
        const msgs = Array.isArray(r?.messages) ? r.messages : [];
        const head = `archive ${r?.archive_id ?? p?.archive_id} (messages ${r?.from_seq}–${r?.to_seq})${r?.abstract ? `: ${r.abstract}` : ""}`;
        return answer([head, ...msgs.map((/** @type {any} */ m) => `#${m.seq} ${m.name || m.role}: ${m.content}`)].join("\n"), r);
      }, true),
    },
    {
      name: "recall_trace",
      label: "Explain recall",
      description: "Show how membus ranked memories for a query: every candidate, its score parts, and why it was kept or dropped.",
      parameters: {
        type: "object", additionalProperties: false, required: ["query"],
        properties: { query: { type: "string", minLength: 1 } },
      },
      execute: async (/** @type {string} */ _id, /** @type {any} */ p) => run("recall_trace", async () => {
        const r = await recall(String(p?.query ?? ""), { trace: true });
        const trace = Array.isArray(r?.trace) ? r.trace : [];
        const lines = trace.map((/** @type {any} */ t) => `- [${t.id}] ${t.scope} score=${Number(t.score).toFixed(3)} dense=${Number(t.parts?.dense ?? 0).toFixed(2)} keyword=${Number(t.parts?.keyword ?? 0).toFixed(2)} boost=${Number(t.parts?.boost ?? 0).toFixed(2)} ${t.kept ? "kept" : `dropped: ${t.dropped}`}`);
        return answer(lines.length ? lines.join("\n") : "No candidates.", { trace, items: r?.items ?? [], degraded: Boolean(r?.degraded) });
      }),
    },
    {
      name: "memory_summary",
      label: "Memory summary",
      description: "The digest of what happened in a day, ISO week or month (built by membus's summarizer).",
      parameters: {
        type: "object", additionalProperties: false,
        properties: {
          period: { enum: ["day", "week", "month"], description: "Default day." },
          date: { type: "string", description: "A date inside the period, YYYY-MM-DD (default today)." },
        },
      },
      execute: async (/** @type {string} */ _id, /** @type {any} */ p) => run("memory_summary", async () => {
        const period = ["day", "week", "month"].includes(p?.period) ? p.period : "day";
        const body = { user_id: config.user, agent_id: s.agentId, period, ...(typeof p?.date === "string" && p.date ? { date: p.date } : {}) };
        let r;
        try {
          r = await rt.rpc("summary", body, timeout);
        } catch (err) {
          // No digest for that period yet is an answer, not a failure: say which one and when.
          if (/** @type {any} */ (err)?.code !== Codes.notFound) throw err;
          const msg = String(/** @type {any} */ (err).message ?? "").replace(/^rpc summary:\s*/, "").replace(/:\s*not found$/, "");
          return answer(`${msg.charAt(0).toUpperCase()}${msg.slice(1)}. Use memory_recall for what was said recently.`, { code: "no_digest" });
        }
        const text = r?.text ?? r?.summary ?? r?.digest?.text ?? (Array.isArray(r?.items) ? r.items.map((/** @type {any} */ it) => it.text).join("\n\n") : "");
        return answer(text ? String(text) : `No ${period} digest yet.`, r);
      }, true),
    },
  ];
}
