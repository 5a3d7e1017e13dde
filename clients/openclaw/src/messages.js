// OpenClaw AgentMessages → TurnEvent messages (schemas/turn_event.schema.json), with stable
// message ids, injected blocks stripped, and oversized content truncated with a visible marker.
import { msgId } from "./ids.js";

/** Per-part ceiling of the schema (characters). */
export const MAX_PART_CHARS = 262144;
/** One message must stay under 256 KiB on the server; leave room for the envelope. */
export const MAX_MESSAGE_BYTES = 250 * 1024;

const RELEVANT_MEMORIES_RE = /<relevant-memories>[\s\S]*?<\/relevant-memories>\s*/g;
export const CONTEXT_MARKER = "[membus context]";
const CONTEXT_BLOCK_RE = /<membus-context>[\s\S]*?<\/membus-context>\s*/g;

/** @param {string} text @returns {string} text without blocks membus injected itself */
export function stripInjected(text) {
  return text.replace(RELEVANT_MEMORIES_RE, "").replace(CONTEXT_BLOCK_RE, "").trim();
}

/**
 * Cuts text to at most maxChars characters, ending with a visible marker.
 * @param {string} text @param {number} maxChars @returns {string}
 */
export function truncate(text, maxChars) {
  if (text.length <= maxChars) return text;
  const marker = `\n…[truncated by membus: ${maxChars} of ${text.length} characters kept]`;
  let keep = Math.max(0, maxChars - marker.length);
  // never split a surrogate pair
  const c = text.charCodeAt(keep - 1);
  if (keep > 0 && c >= 0xd800 && c <= 0xdbff) keep--;
  return text.slice(0, keep) + marker;
}

/** @param {unknown} content @returns {string} the plain text of a content value */
export function contentText(content) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter((p) => p && typeof p === "object" && p.type === "text" && typeof p.text === "string")
    .map((p) => p.text)
    .join("\n");
}

/**
 * @typedef {{ type: "text", text: string } | { type: "image", caption?: string, url?: string } |
 *   { type: "tool_call", id: string, name: string, arguments: string } |
 *   { type: "tool_result", tool_call_id: string, name?: string, output: string, is_error?: boolean }} Part
 * @typedef {{ message_id: string, position: number, role: "user"|"assistant"|"tool"|"system", parts: Part[], name?: string, created_at: string }} EventMessage
 */

/**
 * @param {any} m an AgentMessage
 * @param {number} maxToolOutputChars
 * @returns {{ role: EventMessage["role"], parts: Part[] } | null} null for messages membus does not keep
 */
export function toParts(m, maxToolOutputChars) {
  if (!m || typeof m !== "object") return null;
  /** @type {Part[]} */
  const parts = [];
  const pushText = (/** @type {string} */ t) => {
    const s = stripInjected(t);
    if (s) parts.push({ type: "text", text: s });
  };
  switch (m.role) {
    case "user":
    case "system": {
      if (typeof m.content === "string") pushText(m.content);
      else if (Array.isArray(m.content)) {
        for (const p of m.content) {
          if (p?.type === "text" && typeof p.text === "string") pushText(p.text);
          else if (p?.type === "image") parts.push(typeof p.url === "string" && p.url ? { type: "image", url: p.url } : { type: "image" });
        }
      }
      return parts.length ? { role: m.role, parts } : null;
    }
    case "assistant": {
      const content = typeof m.content === "string" ? [{ type: "text", text: m.content }] : Array.isArray(m.content) ? m.content : [];
      for (const p of content) {
        if (p?.type === "text" && typeof p.text === "string") pushText(p.text);
        else if (p?.type === "toolCall" && p.id && p.name) {
          let args = typeof p.arguments === "string" ? p.arguments : JSON.stringify(p.arguments ?? {});
          if (!args) args = "{}";
          parts.push({ type: "tool_call", id: String(p.id), name: String(p.name), arguments: truncate(args, maxToolOutputChars) });
        }
      }
      return parts.length ? { role: "assistant", parts } : null;
    }
    case "toolResult": {
      let output = contentText(m.content);
      if (!output && m.details !== undefined) output = safeJson(m.details);
      if (!output) output = "(no output)";
      /** @type {Part} */
      const part = { type: "tool_result", tool_call_id: String(m.toolCallId || "unknown"), output: truncate(output, maxToolOutputChars) };
      if (m.toolName) part.name = String(m.toolName);
      if (m.isError === true) part.is_error = true;
      return { role: "tool", parts: [part] };
    }
    default:
      return null; // custom/runtime-context messages are not conversation
  }
}

/** @param {unknown} v @returns {string} */
function safeJson(v) {
  try {
    return JSON.stringify(v) ?? "";
  } catch {
    return "";
  }
}

/** @param {any} m @returns {string | undefined} OpenClaw's own id of a message, when it has one */
export function hostMessageId(m) {
  for (const k of ["id", "messageId", "entryId"]) {
    const v = m?.[k];
    if (typeof v === "string" && v.length > 0 && v.length <= 200) return v;
  }
  return undefined;
}

/**
 * The stable message id: OpenClaw's id when it has one, else a hash of (session, role,
 * timestamp, content) — the same for a retried or re-sent message, so the server dedups it.
 * @param {string} storageSessionId @param {any} m @param {{ role: string, parts: Part[] }} conv
 * @returns {string}
 */
export function stableMessageId(storageSessionId, m, conv) {
  const own = hostMessageId(m);
  if (own) return own;
  const ts = typeof m?.timestamp === "number" && Number.isFinite(m.timestamp) ? String(m.timestamp) : "";
  return "oc-" + msgId(storageSessionId, conv.role, ts, JSON.stringify(conv.parts)).slice(0, 40);
}

/** @param {string} s @returns {number} */
function utf8Len(s) {
  return Buffer.byteLength(s, "utf8");
}

/**
 * Keeps one message under MAX_MESSAGE_BYTES by cutting its largest strings (visible marker).
 * @param {Part[]} parts @returns {Part[]}
 */
export function fitParts(parts) {
  const size = () => parts.reduce((n, p) => n + utf8Len(JSON.stringify(p)), 0);
  let guard = 0;
  while (size() > MAX_MESSAGE_BYTES && guard++ < 64) {
    let best = -1, bestKey = "", bestLen = 0;
    parts.forEach((p, i) => {
      for (const k of ["text", "output", "arguments", "caption"]) {
        const v = /** @type {any} */ (p)[k];
        if (typeof v === "string" && v.length > bestLen) { best = i; bestKey = k; bestLen = v.length; }
      }
    });
    if (best < 0 || bestLen < 64) break;
    const p = /** @type {any} */ (parts[best]);
    // a character is at most 4 bytes in UTF-8: cutting to a quarter of the budget always fits
    p[bestKey] = truncate(p[bestKey], Math.max(64, Math.floor(Math.min(bestLen / 2, MAX_MESSAGE_BYTES / 4))));
  }
  for (const p of parts) {
    const a = /** @type {any} */ (p);
    for (const k of ["text", "output", "arguments", "caption"]) if (typeof a[k] === "string") a[k] = truncate(a[k], MAX_PART_CHARS);
  }
  return parts;
}

/**
 * Converts AgentMessages into TurnEvent messages.
 * @param {string} storageSessionId
 * @param {any[]} messages
 * @param {{ maxToolOutputChars: number, now: () => Date }} opts
 * @returns {EventMessage[]}
 */
export function toEventMessages(storageSessionId, messages, opts) {
  /** @type {EventMessage[]} */
  const out = [];
  for (const m of messages) {
    const conv = toParts(m, opts.maxToolOutputChars);
    if (!conv) continue;
    const parts = fitParts(conv.parts);
    const ts = typeof m.timestamp === "number" && Number.isFinite(m.timestamp) ? new Date(m.timestamp) : opts.now();
    /** @type {EventMessage} */
    const em = {
      message_id: stableMessageId(storageSessionId, m, conv),
      position: out.length,
      role: conv.role,
      parts,
      created_at: (Number.isNaN(ts.getTime()) ? opts.now() : ts).toISOString(),
    };
    if (typeof m.name === "string" && m.name) em.name = m.name.slice(0, 256);
    out.push(em);
  }
  return out;
}
