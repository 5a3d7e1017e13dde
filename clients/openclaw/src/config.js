// Plugin configuration: the defaults of the reference design (issue 9), resolved from the
// plugin entry's config (openclaw.json plugins.entries.membus.config) and MEMBUS_* env vars.

/** @typedef {{ connectMs: number, publishMs: number, recallMs: number, contextMs: number, commitMs: number, toolMs: number }} Timeouts */

/**
 * @typedef {object} MembusConfig
 * @property {string} natsUrl
 * @property {string} [apiKey] membus API key (admin role, bound to `account`): the bus binds the connection to its account
 * @property {string} [token] NATS token (a server in token mode: development only)
 * @property {string} [credentials] path of a NATS .creds file
 * @property {string} [natsUser] NATS user name (with natsPassword)
 * @property {string} [natsPassword]
 * @property {string} [natsTlsCa] PEM CA bundle trusted for NATS over TLS (a tls:// URL alone trusts the system's roots)
 * @property {string} subjectPrefix
 * @property {string} account
 * @property {string} user membus user the turns and memories belong to
 * @property {string} agentPrefix
 * @property {boolean} autoCapture
 * @property {boolean} autoRecall
 * @property {number} commitTokenThreshold
 * @property {number} commitKeepRecentCount
 * @property {number} recallLimit
 * @property {number} recallScoreThreshold
 * @property {number} recallMaxInjectedChars
 * @property {boolean} recallPreferAbstract
 * @property {string[]} bypassSessionPatterns
 * @property {number} maxToolOutputChars
 * @property {number} maxPendingEvents
 * @property {Timeouts} timeouts
 */

/** @type {MembusConfig} */
export const DEFAULTS = Object.freeze({
  natsUrl: "nats://127.0.0.1:4222",
  subjectPrefix: "membus",
  account: "default",
  user: "default",
  agentPrefix: "",
  autoCapture: true,
  autoRecall: true,
  commitTokenThreshold: 20000,
  commitKeepRecentCount: 10,
  recallLimit: 6,
  recallScoreThreshold: 0.15,
  recallMaxInjectedChars: 4000,
  recallPreferAbstract: false,
  bypassSessionPatterns: [],
  maxToolOutputChars: 32768,
  maxPendingEvents: 1000,
  timeouts: Object.freeze({ connectMs: 2000, publishMs: 5000, recallMs: 1500, contextMs: 2500, commitMs: 60000, toolMs: 10000 }),
});

const ACCOUNT_RE = /^[a-z0-9_-]{1,64}$/;
const ENV_REF_RE = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/;
const PREFIX_RE = /^[a-z0-9_-]+$/;
const AGENT_PREFIX_RE = /^[A-Za-z0-9_-]{0,32}$/;

/**
 * Resolves the plugin config: explicit config wins, then MEMBUS_* env vars, then defaults.
 * Invalid values fall back to the default and are reported in `problems` (never thrown: a
 * throwing plugin gets disabled).
 * @param {Record<string, unknown> | undefined} raw
 * @param {Record<string, string | undefined>} [env]
 * @returns {{ config: MembusConfig, problems: string[] }}
 */
export function resolveConfig(raw, env = process.env) {
  const r = raw ?? {};
  /** @type {string[]} */
  const problems = [];
  const str = (/** @type {string} */ key, /** @type {string | undefined} */ envValue, /** @type {string} */ def) => {
    let v = r[key];
    // OpenClaw substitutes ${VAR} in its config and leaves the literal when VAR is unset.
    const ref = typeof v === "string" ? ENV_REF_RE.exec(v) : null;
    if (ref) {
      v = env[ref[1]];
      if (!v) problems.push(`${key}: environment variable ${ref[1]} is not set`);
    }
    if (typeof v === "string" && v !== "") return v;
    if (v !== undefined && typeof v !== "string") problems.push(`${key}: expected a string`);
    return envValue || def;
  };
  const num = (/** @type {string} */ key, /** @type {number} */ def, /** @type {number} */ min, /** @type {number} */ max) => {
    const v = r[key];
    if (v === undefined) return def;
    if (typeof v !== "number" || !Number.isFinite(v) || v < min || v > max) {
      problems.push(`${key}: expected a number in [${min}, ${max}], got ${JSON.stringify(v)}`);
      return def;
    }
    return v;
  };
  const bool = (/** @type {string} */ key, /** @type {boolean} */ def) => {
    const v = r[key];
    if (v === undefined) return def;
    if (typeof v !== "boolean") {
      problems.push(`${key}: expected a boolean`);
      return def;
    }
    return v;
  };

  let account = str("account", env.MEMBUS_ACCOUNT, DEFAULTS.account);
  if (!ACCOUNT_RE.test(account)) {
    problems.push(`account: must be 1 to 64 characters of [a-z0-9_-], got ${JSON.stringify(account)}`);
    account = DEFAULTS.account;
  }
  let subjectPrefix = str("subjectPrefix", env.MEMBUS_SUBJECT_PREFIX, DEFAULTS.subjectPrefix);
  if (!PREFIX_RE.test(subjectPrefix)) {
    problems.push(`subjectPrefix: must be one token of [a-z0-9_-]`);
    subjectPrefix = DEFAULTS.subjectPrefix;
  }
  let agentPrefix = str("agent_prefix", env.MEMBUS_AGENT_PREFIX, DEFAULTS.agentPrefix);
  if (!AGENT_PREFIX_RE.test(agentPrefix)) {
    problems.push(`agent_prefix: must match [A-Za-z0-9_-]{0,32}`);
    agentPrefix = DEFAULTS.agentPrefix;
  }
  let bypass = DEFAULTS.bypassSessionPatterns;
  if (Array.isArray(r.bypassSessionPatterns) && r.bypassSessionPatterns.every((p) => typeof p === "string")) {
    bypass = /** @type {string[]} */ (r.bypassSessionPatterns);
  } else if (r.bypassSessionPatterns !== undefined) {
    problems.push("bypassSessionPatterns: expected an array of strings");
  }
  const t = /** @type {Record<string, unknown>} */ (typeof r.timeouts === "object" && r.timeouts !== null ? r.timeouts : {});
  /** @type {Timeouts} */
  const timeouts = { ...DEFAULTS.timeouts };
  for (const k of /** @type {(keyof Timeouts)[]} */ (Object.keys(DEFAULTS.timeouts))) {
    const v = t[k];
    if (v === undefined) continue;
    if (typeof v === "number" && Number.isFinite(v) && v >= 1 && v <= 600000) timeouts[k] = v;
    else problems.push(`timeouts.${k}: expected a number of milliseconds in [1, 600000]`);
  }

  /** @type {MembusConfig} */
  const config = {
    natsUrl: str("natsUrl", env.MEMBUS_NATS_URL, DEFAULTS.natsUrl),
    apiKey: str("apiKey", env.MEMBUS_API_KEY, "") || undefined,
    token: str("token", env.MEMBUS_NATS_TOKEN, "") || undefined,
    credentials: str("credentials", env.MEMBUS_NATS_CREDS, "") || undefined,
    natsUser: str("natsUser", undefined, "") || undefined,
    natsPassword: str("natsPassword", undefined, "") || undefined,
    natsTlsCa: str("natsTlsCa", env.MEMBUS_NATS_TLS_CA, "") || undefined,
    subjectPrefix,
    account,
    user: str("user", env.MEMBUS_USER, DEFAULTS.user),
    agentPrefix,
    autoCapture: bool("autoCapture", DEFAULTS.autoCapture),
    autoRecall: bool("autoRecall", DEFAULTS.autoRecall),
    commitTokenThreshold: num("commitTokenThreshold", DEFAULTS.commitTokenThreshold, 2000, 200000),
    commitKeepRecentCount: num("commitKeepRecentCount", DEFAULTS.commitKeepRecentCount, 0, 200),
    recallLimit: num("recallLimit", DEFAULTS.recallLimit, 1, 100),
    recallScoreThreshold: num("recallScoreThreshold", DEFAULTS.recallScoreThreshold, 0, 10),
    recallMaxInjectedChars: num("recallMaxInjectedChars", DEFAULTS.recallMaxInjectedChars, 1, 1000000),
    recallPreferAbstract: bool("recallPreferAbstract", DEFAULTS.recallPreferAbstract),
    bypassSessionPatterns: bypass,
    maxToolOutputChars: num("maxToolOutputChars", DEFAULTS.maxToolOutputChars, 256, 262144),
    maxPendingEvents: num("maxPendingEvents", DEFAULTS.maxPendingEvents, 0, 100000),
    timeouts,
  };
  return { config, problems };
}

/**
 * Compiles one bypass pattern, in the glob dialect of OpenViking's OpenClaw plugin: `*` matches
 * within one ":"-separated segment of a session key, `**` across segments, `?` one character of
 * a segment; the whole key must match.
 * @param {string} pattern @returns {RegExp}
 */
export function compileSessionPattern(pattern) {
  const body = pattern
    .replace(/[.+^${}()|[\]\\]/g, "\\$&")
    .replace(/\*\*/g, "\u0000")
    .replace(/\*/g, "[^:]*")
    .replace(/\?/g, "[^:]")
    .replace(/\u0000/g, ".*");
  return new RegExp(`^${body}$`);
}

/**
 * Whether a session is bypassed (never captured, recalled, assembled or compacted by membus):
 * its session key — or its session id when the host gave no key — matches a pattern.
 * @param {{ sessionKey?: string, sessionId?: string }} ref @param {string[]} patterns @returns {boolean}
 */
export function bypassed(ref, patterns) {
  if (!patterns.length) return false;
  const candidate = (ref.sessionKey ?? "").trim() || (ref.sessionId ?? "").trim();
  if (!candidate) return false;
  return patterns.some((p) => compileSessionPattern(p).test(candidate));
}
