package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
)

var (
	instanceIDRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	// qdrantCollectionRe: Qdrant accepts more, but a name that is also a safe path segment and
	// shell word keeps operators out of trouble.
	qdrantCollectionRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,255}$`)
)

// SplitList splits a comma-separated list, dropping empty items.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Validate checks every key and reports all problems at once; each error names the key as
// the user sets it (env var and flag, and the file when the value came from there).
func (c Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		f, _ := c.fieldByKey(key)
		name := f.name()
		if c.Source(key) == SourceFile {
			name = key + " in " + c.ConfigFile + " / " + name
		}
		errs = append(errs, fmt.Errorf("%w: %s: %s", ErrInvalid, name, fmt.Sprintf(format, args...)))
	}
	oneOf := func(key, v string, allowed ...string) {
		for _, a := range allowed {
			if v == a {
				return
			}
		}
		bad(key, "must be one of %s, got %q", strings.Join(allowed, ", "), v)
	}

	if c.DataDir == "" {
		bad("data_dir", "must not be empty")
	}
	if _, err := parseIdleCommit(c.IdleCommit); err != nil {
		bad("idle_commit", "%v", err)
	}
	if err := checkHostPort(c.HTTPAddr); err != nil {
		bad("http_addr", "%v", err)
	}
	if err := checkHostPort(c.NATSListen); err != nil {
		bad("nats_listen", "%v", err)
	}
	if c.NATSURL != "" {
		for _, u := range strings.Split(c.NATSURL, ",") {
			if err := checkURL(strings.TrimSpace(u), "nats", "tls", "ws", "wss"); err != nil {
				bad("nats_url", "%v", err)
			}
		}
	}
	switch {
	case (c.TLSCert == "") != (c.TLSKey == ""):
		bad("tls_cert", "tls_cert and tls_key go together: set both (a PEM certificate chain and its key) or neither")
	case c.TLSCert != "":
		for _, k := range []struct{ key, path string }{{"tls_cert", c.TLSCert}, {"tls_key", c.TLSKey}} {
			if _, err := os.Stat(k.path); err != nil {
				bad(k.key, "%v", err)
			}
		}
	}
	if c.TLSCA != "" {
		if _, err := os.Stat(c.TLSCA); err != nil {
			bad("tls_ca", "%v", err)
		}
	}
	if c.NATSAuth != "keys" && c.NATSAuth != "token" {
		bad("nats_auth", `must be "keys" or "token", got %q`, c.NATSAuth)
	}
	if c.NATSSync != "always" && c.NATSSync != "interval" {
		bad("nats_sync", `must be "always" or "interval", got %q`, c.NATSSync)
	}
	if c.RedisURL != "" {
		if err := checkURL(c.RedisURL, "redis", "rediss", "unix"); err != nil {
			bad("redis_url", "%v", err)
		}
	}
	if c.MySQLDSN != "" {
		if _, err := mysql.ParseDSN(c.MySQLDSN); err != nil {
			bad("mysql_dsn", "not a go-sql-driver DSN (user:pw@tcp(host:3306)/db?parseTime=true): %v", err)
		}
	}
	if !qdrantCollectionRe.MatchString(c.QdrantCollection) {
		bad("qdrant_collection", "must be 1 to 255 characters of [A-Za-z0-9_-], got %q", c.QdrantCollection)
	}
	if c.QdrantURL != "" {
		if err := checkURL(c.QdrantURL, "http", "https"); err != nil {
			bad("qdrant_url", "%v", err)
		}
	}
	// pkg/bus owns the rule (and maps an empty prefix to its default, which a set key must not be).
	if _, err := bus.NewNames(c.SubjectPrefix); err != nil || c.SubjectPrefix == "" {
		bad("subject_prefix", "must be one subject token of [a-z0-9_-] (1-32 chars), got %q", c.SubjectPrefix)
	}
	oneOf("embedder", c.Embedder, "auto", "hash", "openai", "onnx")
	if c.EmbedBaseURL != "" {
		if err := checkURL(c.EmbedBaseURL, "http", "https"); err != nil {
			bad("embed_base_url", "%v", err)
		}
	}
	if c.Embedder == "openai" {
		if c.EmbedBaseURL == "" {
			bad("embed_base_url", "is required when the embedder is openai")
		}
		if c.EmbedModel == "" {
			bad("embed_model", "is required when the embedder is openai")
		}
	}
	if c.LLMBaseURL != "" {
		if err := checkURL(c.LLMBaseURL, "http", "https"); err != nil {
			bad("llm_base_url", "%v", err)
		}
		if c.LLMModel == "" {
			bad("llm_model", "is required when an LLM base URL is set")
		}
	}
	if !instanceIDRe.MatchString(c.InstanceID) {
		bad("instance_id", "must match [A-Za-z0-9_-]{1,64}, got %q", c.InstanceID)
	}
	if _, err := loadLocation(c.TZ); err != nil {
		bad("tz", "unknown time zone %q: %v", c.TZ, err)
	}
	oneOf("log_level", strings.ToLower(c.LogLevel), "debug", "info", "warn", "error")
	oneOf("log_format", c.LogFormat, "auto", "text", "json")
	if c.InsecureNoAuth && !IsLoopback(c.HTTPAddr) {
		bad("insecure_no_auth", "is allowed only when the HTTP address is loopback, and %s is %q", "MEMBUS_HTTP_ADDR", c.HTTPAddr)
	}
	if err := contract.CheckCommitTokenThreshold(c.CommitTokenThreshold); err != nil {
		bad("commit_token_threshold", "%v", err)
	}
	for _, pat := range SplitList(c.BypassSessionPatterns) {
		if _, err := path.Match(pat, ""); err != nil {
			bad("bypass_session_patterns", "bad glob %q: %v", pat, err)
		}
	}
	for _, pat := range SplitList(c.RedactPatterns) {
		if _, err := regexp.Compile(pat); err != nil {
			bad("redact_patterns", "bad regular expression %q: %v", pat, err)
		}
	}
	if c.AgentPrefix != "" && !regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`).MatchString(c.AgentPrefix) {
		bad("agent_prefix", "must match [A-Za-z0-9_-]{1,32}, got %q", c.AgentPrefix)
	}
	for _, sc := range SplitList(c.RecallScopes) {
		if !contract.ValidScope(sc) {
			bad("recall_scopes", "scopes are user, agent and archive, got %q", sc)
		}
	}
	if !contract.ValidFusion(c.RecallFusion) {
		bad("recall_fusion", "must be %q, %q or %q (evaluation only), got %q", contract.FusionWeighted, contract.FusionRRF, contract.FusionDense, c.RecallFusion)
	}
	if c.IngestWorkers < 1 || c.IngestWorkers > 16 {
		bad("ingest_workers", "must be between 1 and 16, got %d", c.IngestWorkers)
	}
	if err := contract.CheckRecallCandidates(c.RecallCandidates); err != nil {
		bad("recall_candidates", "%v", err)
	}
	if err := CheckRateLimit(float64(c.RateLimit)); err != nil {
		bad("rate_limit", "%v", err)
	}
	if err := CheckRateBurst(c.RateBurst); err != nil {
		bad("rate_burst", "%v", err)
	}
	if c.VectorExactMax < 0 {
		bad("vector_exact_max", "must not be negative, got %d", c.VectorExactMax)
	}
	if c.StreamReplicas < 1 || c.StreamReplicas > 5 {
		bad("stream_replicas", "must be between 1 and 5, got %d", c.StreamReplicas)
	}
	if err := contract.CheckKeepRecent(c.KeepRecent); err != nil {
		bad("keep_recent", "%v", err)
	}
	return errors.Join(errs...)
}

func checkHostPort(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("must be host:port, got %q", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("port must be 0-65535, got %q", port)
	}
	return nil
}

func checkURL(raw string, schemes ...string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("not a URL: %w", err)
	}
	for _, s := range schemes {
		if u.Scheme == s {
			if u.Host == "" && s != "unix" {
				return fmt.Errorf("URL %q has no host", redactURL(raw))
			}
			return nil
		}
	}
	return fmt.Errorf("URL scheme must be %s, got %q", strings.Join(schemes, ", "), redactURL(raw))
}
