// The NATS side of the plugin: one lazily opened connection shared by the engine and the tools,
// JetStream publishes with Nats-Msg-Id, and request-reply RPCs on <p>.rpc.<account>.<op>.
import { readFileSync } from "node:fs";
import { connect, credsAuthenticator, headers as natsHeaders } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";

/** Error codes a caller can act on. */
export const Codes = Object.freeze({
  unavailable: "unavailable", // not connected, no responders, connection refused
  timeout: "timeout",
  notFound: "not_found",
  badRequest: "bad_request",
  forbidden: "forbidden", // the credential may not use the subject (wrong account, or not an admin key)
  internal: "internal",
});

/** A failed call to membus, with a code from Codes. */
export class MembusError extends Error {
  /** @param {string} code @param {string} message @param {{ cause?: unknown }} [opts] */
  constructor(code, message, opts) {
    super(message, opts);
    this.name = "MembusError";
    this.code = code;
  }
}

/** @param {unknown} err @returns {boolean} true when membus cannot be reached right now */
export function isUnavailable(err) {
  return err instanceof MembusError && (err.code === Codes.unavailable || err.code === Codes.timeout);
}

/**
 * Classifies an error of the NATS client.
 * @param {unknown} err @param {string} what @returns {MembusError}
 */
export function classify(err, what) {
  if (err instanceof MembusError) return err;
  const e = /** @type {any} */ (err);
  const name = String(e?.name ?? "");
  const msg = String(e?.message ?? e);
  const noResponders = name === "NoRespondersError" || (typeof e?.isNoResponders === "function" && e.isNoResponders()) ||
    e?.cause?.name === "NoRespondersError" || /no responders/i.test(msg) || e?.code === "503";
  if (name === "PermissionViolationError" || /permissions violation/i.test(msg)) {
    return new MembusError(Codes.forbidden, `${what}: refused by membus's NATS: the API key may not use this subject (is \`account\` the key's account, and is it an admin key?)`, { cause: err });
  }
  if (noResponders) return new MembusError(Codes.unavailable, `${what}: no responders (is membus running?)`, { cause: err });
  if (name === "TimeoutError" || /timeout/i.test(msg) || e?.code === "TIMEOUT") return new MembusError(Codes.timeout, `${what}: timed out`, { cause: err });
  return new MembusError(Codes.unavailable, `${what}: ${msg}`, { cause: err });
}

/** @param {string} key @returns {string | null} the id of a membus API key (mbk_<id>_<secret>) */
export function keyID(key) {
  const m = /^mbk_([0-9a-f]{16})_[0-9a-f]+$/.exec(key);
  return m ? m[1] : null;
}

/**
 * @typedef {object} Transport
 * @property {(subject: string, payload: object, msgId: string) => Promise<{ seq: number, duplicate: boolean }>} publish
 * @property {(op: string, body: object, timeoutMs: number) => Promise<any>} request
 * @property {() => Promise<void>} close
 */

/**
 * A Transport over a real NATS connection. The connection opens on first use; after a failed
 * connect, calls fail fast for `retryAfterMs` instead of waiting on every turn. Once connected,
 * the client reconnects by itself (unbounded attempts).
 * @param {import("./config.js").MembusConfig} config
 * @param {{ warn: (m: string) => void, info: (m: string) => void }} logger
 * @param {{ retryAfterMs?: number, now?: () => number }} [opts]
 * @returns {Transport & { connected: () => boolean }}
 */
export function createNatsTransport(config, logger, opts = {}) {
  const retryAfterMs = opts.retryAfterMs ?? 3000;
  const now = opts.now ?? Date.now;
  /** @type {Promise<any> | null} */
  let connecting = null;
  /** @type {any} */
  let nc = null;
  /** @type {any} */
  let js = null;
  let downUntil = 0;
  let closed = false;

  async function conn() {
    if (closed) throw new MembusError(Codes.unavailable, "membus client is closed");
    if (nc && !nc.isClosed()) return nc;
    if (now() < downUntil) throw new MembusError(Codes.unavailable, `membus unreachable at ${config.natsUrl} (retrying shortly)`);
    if (!connecting) {
      connecting = (async () => {
        /** @type {Record<string, unknown>} */
        const o = {
          servers: config.natsUrl.split(",").map((s) => s.trim()).filter(Boolean),
          name: "membus-openclaw-plugin",
          timeout: config.timeouts.connectMs,
          reconnect: true,
          maxReconnectAttempts: -1,
          reconnectTimeWait: 1000,
          waitOnFirstConnect: false,
        };
        if (config.apiKey) {
          // The key's id names the only reply inboxes the bus lets this connection read.
          const id = keyID(config.apiKey);
          if (!id) throw new MembusError(Codes.badRequest, "apiKey is not a membus API key (mbk_<id>_<secret>): create one with `membus keys create --role admin`");
          o.token = config.apiKey;
          o.inboxPrefix = `_INBOX.${id}`;
        } else if (config.token) o.token = config.token;
        if (config.natsUser) { o.user = config.natsUser; o.pass = config.natsPassword ?? ""; }
        if (config.credentials) o.authenticator = credsAuthenticator(new Uint8Array(readFileSync(config.credentials)));
        // TLS when a CA is given or a URL asks for it (tls://); an empty tls object means the
        // system's roots. A plain nats:// URL to a TLS server then upgrades too.
        if (config.natsTlsCa) o.tls = { caFile: config.natsTlsCa };
        else if (/(^|,)\s*tls:\/\//.test(config.natsUrl)) o.tls = {};
        try {
          const c = await connect(o);
          nc = c;
          js = jetstream(c, { timeout: config.timeouts.publishMs });
          downUntil = 0;
          logger.info(`membus: connected to ${config.natsUrl}`);
          (async () => {
            for await (const s of c.status()) {
              if (s.type === "disconnect" || s.type === "reconnect") logger.info(`membus: nats ${s.type}`);
            }
          })().catch(() => {});
          return c;
        } catch (err) {
          downUntil = now() + retryAfterMs;
          throw classify(err, `connect ${config.natsUrl}`);
        } finally {
          connecting = null;
        }
      })();
    }
    return connecting;
  }

  return {
    connected: () => Boolean(nc && !nc.isClosed()),
    async publish(subject, payload, msgId) {
      await conn();
      try {
        const ack = await js.publish(subject, JSON.stringify(payload), { msgID: msgId, timeout: config.timeouts.publishMs });
        return { seq: Number(ack.seq), duplicate: Boolean(ack.duplicate) };
      } catch (err) {
        throw classify(err, `publish ${subject}`);
      }
    },
    async request(op, body, timeoutMs) {
      const c = await conn();
      const subject = `${config.subjectPrefix}.rpc.${config.account}.${op}`;
      let msg;
      try {
        msg = await c.request(subject, JSON.stringify(body), { timeout: timeoutMs, headers: natsHeaders() });
      } catch (err) {
        throw classify(err, `rpc ${op}`);
      }
      const svcErr = msg.headers?.get("Nats-Service-Error");
      const svcCode = msg.headers?.get("Nats-Service-Error-Code");
      /** @type {any} */
      let data = null;
      try {
        data = msg.data.length ? JSON.parse(new TextDecoder().decode(msg.data)) : null;
      } catch {
        if (!svcErr) throw new MembusError(Codes.internal, `rpc ${op}: reply is not JSON`);
      }
      if (svcErr || (data && typeof data.error === "string" && typeof data.code === "string")) {
        const code = data?.code ?? codeFromStatus(svcCode);
        throw new MembusError(code, `rpc ${op}: ${data?.error ?? svcErr}`);
      }
      return data;
    },
    async close() {
      closed = true;
      const c = nc ?? (connecting ? await connecting.catch(() => null) : null);
      nc = null;
      if (c && !c.isClosed()) await c.drain().catch(() => c.close());
    },
  };
}

/** @param {string | undefined | null} status @returns {string} */
function codeFromStatus(status) {
  switch (status) {
    case "400": return Codes.badRequest;
    case "404": return Codes.notFound;
    case "503": return Codes.unavailable;
    default: return Codes.internal;
  }
}
