// Package config loads the settings every membus process shares: command-line flags, MEMBUS_*
// environment variables (the names of docs/design.md §9 are a contract), an optional YAML file and the
// defaults, in that order of precedence. Validate names the key the user set in every error.
package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/vector"
)

// ErrInvalid marks a configuration that cannot run; every error of Load and Validate wraps it.
var ErrInvalid = errors.New("invalid config")

// Sources of a value, as WriteYAML and Source report them.
const (
	SourceDefault = "default"
	SourceFile    = "file"
	SourceEnv     = "env"
	SourceFlag    = "flag"
)

// Config is the shared configuration of every service and of the CLI.
type Config struct {
	DataDir, HTTPAddr, TLSCert, TLSKey, TLSCA, NATSListen, NATSURL, NATSToken, NATSUser, NATSPassword, NATSAuth, NATSSync, RedisURL, MySQLDSN, QdrantURL, QdrantCollection,
	SubjectPrefix, Embedder, ModelDir, EmbedBaseURL, EmbedModel, EmbedAPIKey, LLMBaseURL, LLMModel,
	LLMAPIKey, InstanceID, TZ, LogLevel string
	// LogFormat is "auto" (text on a terminal, JSON otherwise), "text" or "json".
	LogFormat      string
	InsecureNoAuth bool
	// CommitTokenThreshold is the default pending-token threshold of a commit (2000–200000).
	CommitTokenThreshold int
	// KeepRecent is how many newest messages stay active after an automatic commit.
	KeepRecent int
	// IdleCommit is how long a session with uncommitted messages may go without a new turn
	// before it is committed whole (a Go duration; "0" disables it). See IdleCommitDuration.
	IdleCommit string
	// BypassSessionPatterns are comma-separated glob patterns of session ids never captured.
	BypassSessionPatterns string
	// AgentPrefix prefixes OpenClaw agent ids (<prefix>_<id>) when set.
	AgentPrefix string
	// RedactPatterns are extra comma-separated regular expressions whose matches are redacted
	// before anything is stored (the built-in patterns always apply).
	RedactPatterns string
	// IngestWorkers are the fetch loops of one ingest process (2; 1–16): while one batch waits
	// for its SQL commit another is written, so two store a session's turns in the order their
	// batches commit; one stores them in the stream's order.
	IngestWorkers int
	// RecallScopes are the default recall scopes (comma-separated user, agent, archive; empty:
	// all three).
	RecallScopes string
	// RecallFusion is "weighted" (0.7 dense + 0.3 keyword, the default) or "rrf".
	RecallFusion string
	// RecallDecay and RecallMMR switch on temporal decay and MMR (both off by default, docs/design.md §6).
	RecallDecay, RecallMMR bool
	// RecallPersonQueries: a question naming two of the user's speakers is embedded once more
	// per person (off by default: those questions take a second model run, past the latency
	// budget; docs/recall-quality.md, issue 18's person round).
	RecallPersonQueries bool
	// RecallCandidates is how many candidates recall takes from each side, dense and keyword,
	// of each scope (24, SPEC; 1–200): more find more, at a cost in latency.
	RecallCandidates int
	// RateLimit and RateBurst are the gateway's token bucket per API key: requests per second
	// and bucket size (shared through Redis when it is configured, else per replica).
	RateLimit, RateBurst int
	// VectorExactMax is the largest number of memories of one user and scope the local vector
	// store searches exactly; larger ones are searched through int8-quantised vectors with exact
	// re-scoring (0: all of them).
	VectorExactMax int
	// StreamReplicas is the JetStream replica count of the streams membus creates (1; 3 on a
	// 3-node cluster, as deploy/ runs).
	StreamReplicas int
	// ConfigFile is the optional YAML file (--config / MEMBUS_CONFIG).
	ConfigFile string

	// sources records where each key's value came from (key → Source*); nil means defaults.
	sources map[string]string
}

// Defaults returns the defaults of docs/design.md §9. A key that a service or an adapter reads
// takes its default from the package that owns it (defaults.go, pkg/contract, pkg/bus).
func Defaults() Config {
	return Config{
		DataDir:              "./data",
		HTTPAddr:             DefaultHTTPAddr,
		NATSListen:           "127.0.0.1:4222",
		NATSAuth:             "keys",
		NATSSync:             "always",
		SubjectPrefix:        bus.DefaultPrefix,
		QdrantCollection:     "membus_memories",
		Embedder:             "auto",
		InstanceID:           defaultInstanceID(),
		TZ:                   "Local",
		LogLevel:             "info",
		LogFormat:            "auto",
		CommitTokenThreshold: contract.DefaultCommitTokenThreshold,
		KeepRecent:           contract.DefaultKeepRecent,
		IdleCommit:           formatDuration(DefaultIdleCommit),
		RecallFusion:         contract.FusionWeighted,
		RecallCandidates:     contract.DefaultRecallCandidates,
		IngestWorkers:        2,
		RateLimit:            DefaultRateLimit,
		RateBurst:            DefaultRateBurst,
		StreamReplicas:       1,
		VectorExactMax:       vector.DefaultExactMax,
	}
}

var notTokenSafe = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// defaultInstanceID is host and pid, made token-safe (it is placed in subjects).
func defaultInstanceID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "membus"
	}
	host = strings.Trim(notTokenSafe.ReplaceAllString(host, "-"), "-")
	pid := strconv.Itoa(os.Getpid())
	if max := 64 - len(pid) - 1; len(host) > max {
		host = host[:max]
	}
	if host == "" {
		host = "membus"
	}
	return host + "-" + pid
}

// field describes one key: its YAML name (snake_case); env is MEMBUS_<KEY>, flag --<key-kebab>.
type field struct {
	key    string
	help   string
	str    *string
	b      *bool
	n      *int
	secret bool // the whole value is a secret
	noFile bool // not settable from the YAML file
	// doc is the README's meaning of the key (help when empty); def the README's default when
	// it is not a plain value (computed or generated).
	doc, def string
}

func (f field) env() string  { return "MEMBUS_" + strings.ToUpper(f.key) }
func (f field) flag() string { return strings.ReplaceAll(f.key, "_", "-") }

// name is how errors name the key: env var and flag.
func (f field) name() string { return f.env() + " / --" + f.flag() }

func (c *Config) fields() []field {
	return []field{
		{key: "data_dir", str: &c.DataDir, help: "directory of embedded data (SQLite, JetStream, vectors, models)", doc: "embedded data: NATS store, SQLite, vector index, token"},
		{key: "http_addr", str: &c.HTTPAddr, help: "HTTP listen address host:port", doc: "HTTP API (and `/healthz`, `/readyz`, `/metrics` for single services)"},
		{key: "tls_cert", str: &c.TLSCert, help: "PEM certificate (chain) file: serve HTTP and the embedded NATS server over TLS (with tls_key)", doc: "serve the HTTP API (and a service's ops port) and the embedded NATS server over TLS with this certificate chain; with `tls_key`"},
		{key: "tls_key", str: &c.TLSKey, help: "PEM private key file of tls_cert", doc: "the private key of `tls_cert`"},
		{key: "tls_ca", str: &c.TLSCA, help: "PEM CA bundle trusted when connecting to NATS over TLS (default: the system's; membus up trusts its own tls_cert)", doc: "CA bundle trusted for NATS over TLS (an external cluster with TLS, or the embedded server's certificate when a private CA signed it); without it the system's roots, and `membus up` and the CLI trust the embedded server's own `tls_cert`"},
		{key: "nats_listen", str: &c.NATSListen, help: "embedded NATS server listen address host:port", doc: "the embedded NATS server's address"},
		{key: "nats_url", str: &c.NATSURL, help: "external NATS URL(s), comma-separated; when set, no embedded server", doc: "external NATS; when set, no embedded server"},
		{key: "nats_token", str: &c.NATSToken, secret: true, help: "NATS auth token", doc: "NATS token (embedded: created at first start in the data dir)", def: "generated"},
		{key: "nats_user", str: &c.NATSUser, help: `NATS user to connect as (default: "membus" for membus up and the tools, the service's own user, e.g. membus-ingest, for membus <service>)`, doc: "the NATS user: `membus up` and the tools connect as `membus` (everything); `membus <service>` as its own user with only its job's permissions (`<prefix>-<service>`, docs/distributed.md); set `membus` here for a server whose config has no service users yet", def: "by command"},
		{key: "nats_password", str: &c.NATSPassword, secret: true, help: "the NATS user's password (default: derived from the token; membus keys nats-passwords prints them)", doc: "the NATS user's password; by default derived from the token (`membus keys nats-passwords`), so a service can be handed its own password instead of the token (not the gateway: it needs the token for the auth callout)", def: "from the token"},
		{key: "nats_auth", str: &c.NATSAuth, help: `who may use the bus: "keys" (API keys, each bound to its account or user; membus itself uses the token and its services their own users) or "token" (every holder of the token may do everything: development only)`, doc: "`keys`: clients (the plugin) connect with an API key, bound by the auth callout to its account or user; membus itself connects with the token, its services as their own users (MEMBUS_NATS_USER). `token`: the token opens everything (development only)"},
		{key: "nats_sync", str: &c.NATSSync, help: `JetStream fsync: "always" (durable) or "interval"`, doc: "`always` fsyncs every JetStream write; `interval` trades durability for throughput"},
		{key: "stream_replicas", n: &c.StreamReplicas, help: "JetStream replicas of the streams membus creates (1, 3 or 5; at most the cluster's size)", doc: "JetStream replicas of the streams membus creates, with an external NATS cluster (1, 3 or 5; at most the cluster's size)"},
		{key: "redis_url", str: &c.RedisURL, help: "Redis URL, e.g. redis://:pw@host:6379/0 (empty: in-process cache)", doc: "Redis: hot session cache, dedup keys, distributed locks; else SQL only and in-process locks"},
		{key: "mysql_dsn", str: &c.MySQLDSN, help: "MySQL DSN, e.g. user:pw@tcp(host:3306)/db?parseTime=true (empty: SQLite)", doc: "MySQL/MariaDB (go-sql-driver DSN; a database created with `COLLATE utf8mb4_bin`: ids are case-sensitive); else SQLite in the data dir"},
		{key: "qdrant_url", str: &c.QdrantURL, help: "Qdrant URL (empty: local vector store)", doc: "Qdrant's gRPC endpoint (`http://host:6334`), the index every replica shares, instead of a local index per process (CI runs the adapter against a faithful fake; `MEMBUS_TEST_QDRANT_URL` runs the same suite against a real Qdrant, see `pkg/vector/qdrant`)"},
		{key: "qdrant_collection", str: &c.QdrantCollection, help: "the Qdrant collection of this deployment", doc: "the deployment's Qdrant collection (`eval`/`bench --backend real` use one of their own per run and drop it)"},
		{key: "vector_exact_max", n: &c.VectorExactMax, help: "largest number of points of one user and scope the local vector store searches exactly; larger ones through int8-quantised vectors with exact re-scoring (0: all)", doc: "the local vector store searches a user's memories of one scope exactly up to this many; above it, by int8-quantised vectors (1 byte a dimension in memory) and re-scores 4× the candidates exactly with the float32 vectors (kept in memory up to 16,384 memories of one scope, in a spill file under the data dir above it) (`0`: every user; evidence recall on LoCoMo unchanged, see Performance)"},
		{key: "subject_prefix", str: &c.SubjectPrefix, help: "subject prefix, one token of [a-z0-9_-]", doc: "prefix of every subject, stream and consumer"},
		{key: "embedder", str: &c.Embedder, help: "embedder: auto, hash, openai or onnx", doc: "`auto` (follows the index's stored model, and refuses a `MEMBUS_MODEL_DIR` holding another, saying how to fetch the data's or move the data with `membus reembed`; on new data `onnx` when the local model is present, else `hash`), `hash` (`hash-v2-384`; data built with `hash-v1-384` keeps it), `onnx`, `openai`"},
		{key: "model_dir", str: &c.ModelDir, help: "ONNX model directory (default <data-dir>/models)", doc: "the local ONNX model (`make model` fetches e5-small-v2-int8 into an empty directory and leaves one that holds a model on it; [changing the model](docs/operations.md#changing-the-embedding-model))", def: "`<data>/models`"},
		{key: "embed_base_url", str: &c.EmbedBaseURL, help: "OpenAI-compatible embeddings base URL", doc: "OpenAI-compatible `/v1/embeddings` (Ollama, TEI, vLLM, OpenAI) for `--embedder openai`"},
		{key: "embed_model", str: &c.EmbedModel, help: "embedding model name", doc: "its embedding model"},
		{key: "embed_api_key", str: &c.EmbedAPIKey, secret: true, help: "embeddings API key", doc: "its API key"},
		{key: "llm_base_url", str: &c.LLMBaseURL, help: "OpenAI-compatible chat base URL (empty: heuristic extractor)", doc: "OpenAI-compatible chat model for memory extraction and summaries; falls back to the heuristic extractor and says so"},
		{key: "llm_model", str: &c.LLMModel, help: "chat model name", doc: "its chat model"},
		{key: "llm_api_key", str: &c.LLMAPIKey, secret: true, help: "chat API key", doc: "its API key"},
		{key: "instance_id", str: &c.InstanceID, help: "instance id, [A-Za-z0-9_-]{1,64} (default host-pid)", doc: "instance id in logs and metrics subjects", def: "host-pid"},
		{key: "tz", str: &c.TZ, help: "time zone of scheduled digests (IANA name, Local or UTC)", doc: "time zone of scheduled jobs"},
		{key: "log_level", str: &c.LogLevel, help: "log level: debug, info, warn or error", doc: "`debug`, `info`, `warn`, `error`"},
		{key: "log_format", str: &c.LogFormat, help: `log format: "auto" (text on a terminal, else JSON), "text" or "json"`, doc: "`auto` (text on a terminal, else JSON), `text`, `json`"},
		{key: "insecure_no_auth", b: &c.InsecureNoAuth, help: "accept HTTP requests without an API key (loopback only)", doc: "loopback only: identity from `X-Membus-Account` / `X-Membus-User`"},
		{key: "commit_token_threshold", n: &c.CommitTokenThreshold, help: "pending tokens that trigger a commit (2000-200000)", doc: "pending tokens that trigger an automatic commit (2000–200000)"},
		{key: "keep_recent", n: &c.KeepRecent, help: "newest messages kept active after an automatic commit", doc: "messages kept active after an automatic commit"},
		{key: "idle_commit", str: &c.IdleCommit, help: `commit a session with no new turn for this long, e.g. "30m" ("0": never)`, doc: "a session with uncommitted messages and no new turn for this long is committed whole, once (`0`: never); short chats become memory"},
		{key: "bypass_session_patterns", str: &c.BypassSessionPatterns, help: "comma-separated glob patterns of session ids never captured", doc: "comma-separated globs of session ids never captured"},
		{key: "agent_prefix", str: &c.AgentPrefix, help: "prefix of OpenClaw agent ids (<prefix>_<id>)", doc: "prefix of OpenClaw agent ids (`<prefix>_<id>`)"},
		{key: "redact_patterns", str: &c.RedactPatterns, help: "extra comma-separated regular expressions redacted before storing", doc: "extra comma-separated regular expressions redacted before storing"},
		{key: "ingest_workers", n: &c.IngestWorkers, help: "fetch loops of one ingest process, 1-16 (1: a session's turns stored in the stream's order)", doc: "fetch loops of one ingest process, 1–16: two overlap one batch's SQL commit with the next; one stores each session's turns in the order they stand in the stream (`membus eval` runs one, so that its ingests repeat exactly)"},
		{key: "recall_scopes", str: &c.RecallScopes, help: "default recall scopes, comma-separated user, agent, archive (empty: all three)", doc: "default recall scopes", def: "`user,agent,archive`"},
		{key: "recall_fusion", str: &c.RecallFusion, help: `recall score fusion: "weighted" (0.7 dense + 0.3 keyword), "rrf", or "dense" (dense search alone, an evaluation baseline)`, doc: "`weighted` (0.7 dense + 0.3 keyword), `rrf`, or `dense` (dense search alone: an evaluation baseline, `membus eval locomo --fusion dense`)"},
		{key: "recall_decay", b: &c.RecallDecay, help: "temporal decay of recall scores (half-life 30 days, never below 0.5x)", doc: "temporal decay of recall scores (half-life 30 days)"},
		{key: "recall_candidates", n: &c.RecallCandidates, help: "candidates recall takes from each side (dense, keyword) of each scope, 1-200", doc: "candidates recall takes from each side (dense and keyword) of each scope, 1–200 (and twice as many session contexts): more find more and cost latency (LoCoMo R@10 and `bench recall` p99 at 24, 48 and 100 in docs/recall-quality.md)"},
		{key: "recall_person_queries", b: &c.RecallPersonQueries, help: "embed a question that names two of the user's speakers once more per person, in one batch of two (multi-hop recall; opt-in: those questions take a second model run, past the 15 ms p99 budget)", doc: "opt-in: a question that names two of the user's speakers is embedded once more per person, in one batch of two, and ranks each candidate by the better person too (LoCoMo multi-hop R@10 0.589 → 0.605); those questions take a second model run, p99 35–38 ms at 10,000 memories here, past the 15 ms budget, so it is off by default (docs/recall-quality.md, the person round)"},
		{key: "recall_mmr", b: &c.RecallMMR, help: "MMR diversity re-ranking of recall results (lambda 0.7)", doc: "MMR diversity re-ranking of recall results (λ 0.7)"},
		{key: "rate_limit", n: &c.RateLimit, help: "HTTP requests per second per API key (token bucket; shared through Redis when set)", doc: "HTTP requests per second per API key (token bucket; shared through Redis when set, else per replica)"},
		{key: "rate_burst", n: &c.RateBurst, help: "HTTP request burst per API key", doc: "HTTP request burst per API key"},
		{key: "config", str: &c.ConfigFile, noFile: true, help: "optional YAML config file", doc: "optional YAML file of these keys (snake_case names)"},
	}
}

func (c *Config) fieldByKey(key string) (field, bool) {
	for _, f := range c.fields() {
		if f.key == key {
			return f, true
		}
	}
	return field{}, false
}

// FlagSet is where RegisterFlags defines the keys: the standard library's *flag.FlagSet and
// spf13/pflag's *FlagSet (the CLI's) both are one.
type FlagSet interface {
	StringVar(p *string, name, value, usage string)
	BoolVar(p *bool, name string, value bool, usage string)
	IntVar(p *int, name string, value int, usage string)
}

// RegisterFlags defines every key as a kebab-case flag whose default is c's current value.
func (c *Config) RegisterFlags(fs FlagSet) {
	for _, f := range c.fields() {
		usage := f.help + " (" + f.env() + ")"
		switch {
		case f.str != nil:
			fs.StringVar(f.str, f.flag(), *f.str, usage)
		case f.b != nil:
			fs.BoolVar(f.b, f.flag(), *f.b, usage)
		case f.n != nil:
			fs.IntVar(f.n, f.flag(), *f.n, usage)
		}
	}
}

// Source says where the value of key (snake_case) came from: flag, env, file or default.
func (c Config) Source(key string) string {
	if s, ok := c.sources[key]; ok {
		return s
	}
	return SourceDefault
}

// ModelPath is the ONNX model directory: ModelDir, or <DataDir>/models.
func (c Config) ModelPath() string {
	if c.ModelDir != "" {
		return c.ModelDir
	}
	return filepath.Join(c.DataDir, "models")
}

// Location is the time zone of TZ; UTC if it does not load (Validate reports that).
func (c Config) Location() *time.Location {
	loc, err := loadLocation(c.TZ)
	if err != nil {
		return time.UTC
	}
	return loc
}

func loadLocation(tz string) (*time.Location, error) {
	if tz == "" || tz == "Local" {
		return time.Local, nil
	}
	return time.LoadLocation(tz)
}

// IdleCommitDuration is IdleCommit parsed; 0 (off) when it does not parse (Validate reports that).
func (c Config) IdleCommitDuration() time.Duration {
	d, err := parseIdleCommit(c.IdleCommit)
	if err != nil {
		return 0
	}
	return d
}

func parseIdleCommit(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("not a duration like 30m or 90s: %q", s)
	}
	if err := CheckIdleCommit(d); err != nil {
		return 0, err
	}
	return d, nil
}

// Embedded reports whether this process runs the embedded NATS server (no NATSURL).
func (c Config) Embedded() bool { return c.NATSURL == "" }

func (f field) String() string {
	switch {
	case f.str != nil:
		return *f.str
	case f.b != nil:
		return strconv.FormatBool(*f.b)
	case f.n != nil:
		return strconv.Itoa(*f.n)
	}
	return ""
}

func (f field) set(s string) error {
	switch {
	case f.str != nil:
		*f.str = s
	case f.b != nil:
		v, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("not a boolean: %q", s)
		}
		*f.b = v
	case f.n != nil:
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("not an integer: %q", s)
		}
		*f.n = v
	}
	return nil
}
