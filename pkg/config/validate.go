package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
)

var (
	subjectPrefixRe = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)
	instanceIDRe    = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
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
	if !subjectPrefixRe.MatchString(c.SubjectPrefix) {
		bad("subject_prefix", "must be one subject token of [a-z0-9_-] (1-64 chars), got %q", c.SubjectPrefix)
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
	if c.InsecureNoAuth && !isLoopback(c.HTTPAddr) {
		bad("insecure_no_auth", "is allowed only when the HTTP address is loopback, and %s is %q", "MEMBUS_HTTP_ADDR", c.HTTPAddr)
	}
	if c.CommitTokenThreshold < 2000 || c.CommitTokenThreshold > 200000 {
		bad("commit_token_threshold", "must be between 2000 and 200000, got %d", c.CommitTokenThreshold)
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
		if sc != "user" && sc != "agent" && sc != "archive" {
			bad("recall_scopes", "scopes are user, agent and archive, got %q", sc)
		}
	}
	if c.RecallFusion != "weighted" && c.RecallFusion != "rrf" && c.RecallFusion != "dense" {
		bad("recall_fusion", `must be "weighted", "rrf" or "dense" (evaluation only), got %q`, c.RecallFusion)
	}
	if c.RateLimit <= 0 {
		bad("rate_limit", "must be positive, got %d", c.RateLimit)
	}
	if c.RateBurst < 1 {
		bad("rate_burst", "must be at least 1, got %d", c.RateBurst)
	}
	if c.StreamReplicas < 1 || c.StreamReplicas > 5 {
		bad("stream_replicas", "must be between 1 and 5, got %d", c.StreamReplicas)
	}
	if c.KeepRecent < 0 || c.KeepRecent > 200 {
		bad("keep_recent", "must be between 0 and 200 (the hot cache holds 200), got %d", c.KeepRecent)
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

// isLoopback reports whether a host:port address listens on loopback only.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
