// Identity mapping shared with the Go side (SPEC §2, §3). Every function here mirrors one in
// pkg/contract/openclaw.go or pkg/bus/ids.go; test/ids.test.js mirrors their table tests.
import { createHash } from "node:crypto";

const UUID_RE = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const AGENT_KEY_RE = /^agent:([^:]+):/;
const NOT_AGENT_SAFE_RE = /[^a-zA-Z0-9_-]+/g;
const WINDOWS_ILLEGAL_RE = /[:<>"\\/|?*]/;
const SAFE_TOKEN_RE = /^[A-Za-z0-9_-]{1,64}$/;

/** @param {string} s @returns {string} lower-case sha256 hex of the UTF-8 bytes of s */
export function sha256Hex(s) {
  return createHash("sha256").update(s, "utf8").digest("hex");
}

/**
 * membus's storage id of an OpenClaw session, exactly as contract.OpenClawSessionID: a UUID
 * session id is lower-cased; else a non-empty session key becomes sha256(key); else an id with
 * Windows-illegal characters becomes sha256("openclaw-session:" + id); else the id as is.
 * @param {string} sessionId @param {string | undefined} sessionKey @returns {string}
 */
export function openClawSessionId(sessionId, sessionKey) {
  if (UUID_RE.test(sessionId)) return sessionId.toLowerCase();
  if (sessionKey) return sha256Hex(sessionKey);
  if (WINDOWS_ILLEGAL_RE.test(sessionId)) return sha256Hex("openclaw-session:" + sessionId);
  return sessionId;
}

/**
 * The agent id, exactly as contract.OpenClawAgentID: <id> of a session key agent:<id>:<rest>,
 * else the runtime agent id, else "main"; prefixed "<prefix>_"; sanitised to [a-zA-Z0-9_-].
 * @param {string | undefined} sessionKey @param {string | undefined} runtimeAgentId
 * @param {string | undefined} prefix @returns {string}
 */
export function openClawAgentId(sessionKey, runtimeAgentId, prefix) {
  let id = runtimeAgentId ?? "";
  const m = AGENT_KEY_RE.exec(sessionKey ?? "");
  if (m) id = m[1];
  if (!id) id = "main";
  if (prefix) id = prefix + "_" + id;
  return id.replace(NOT_AGENT_SAFE_RE, "_");
}

/**
 * The subject token of a session storage id, as bus.SessionToken: the id itself when it
 * matches [A-Za-z0-9_-]{1,64}, else its sha256 hex.
 * @param {string} id @returns {string}
 */
export function sessionToken(id) {
  return SAFE_TOKEN_RE.test(id) ? id : sha256Hex(id);
}

/**
 * A deterministic id over parts joined by the unit separator 0x1f, as bus.MsgID.
 * @param {...string} parts @returns {string}
 */
export function msgId(...parts) {
  return sha256Hex(parts.join("\x1f"));
}
