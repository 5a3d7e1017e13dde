package config

import (
	"net/url"
	"regexp"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// Redacted is the value written in place of a secret.
const Redacted = "***"

// Redacted returns a copy with every secret replaced by "***": tokens and API keys whole,
// passwords inside the MySQL DSN and inside URLs, NATS URL tokens, and secret query parameters.
func (c Config) Redacted() Config {
	out := c
	for _, f := range out.fields() {
		if f.secret && f.str != nil && *f.str != "" {
			*f.str = Redacted
		}
	}
	out.MySQLDSN = redactDSN(c.MySQLDSN)
	urls := strings.Split(c.NATSURL, ",")
	for i, u := range urls {
		urls[i] = redactURL(u)
	}
	out.NATSURL = strings.Join(urls, ",")
	out.RedisURL = redactURL(c.RedisURL)
	out.QdrantURL = redactURL(c.QdrantURL)
	out.EmbedBaseURL = redactURL(c.EmbedBaseURL)
	out.LLMBaseURL = redactURL(c.LLMBaseURL)
	return out
}

// redactDSN replaces the password of a go-sql-driver DSN, keeping the rest as written.
func redactDSN(dsn string) string {
	if dsn == "" {
		return dsn
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		// Unparseable: keep nothing between the first ':' and the last '@' before the address.
		at := strings.LastIndex(dsn, "@")
		colon := strings.Index(dsn, ":")
		if at > 0 && colon >= 0 && colon < at {
			return dsn[:colon+1] + Redacted + dsn[at:]
		}
		return dsn
	}
	if cfg.Passwd == "" {
		return dsn
	}
	at := strings.LastIndex(dsn[:strings.LastIndex(dsn, "/")+1], "@")
	if at < 0 {
		return dsn
	}
	return cfg.User + ":" + Redacted + dsn[at:]
}

var secretParam = regexp.MustCompile(`(?i)(key|token|secret|passw|pwd|auth)`)

// redactURL replaces a URL's password (or a user-only token, as NATS URLs carry it) and
// secret-looking query parameters.
func redactURL(raw string) string {
	if raw == "" {
		return raw
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return Redacted
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), Redacted)
		} else if u.Scheme == "nats" || u.Scheme == "tls" || u.Scheme == "ws" || u.Scheme == "wss" {
			u.User = url.User(Redacted) // nats://token@host
		}
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			if secretParam.MatchString(k) {
				q.Set(k, Redacted)
			}
		}
		u.RawQuery = q.Encode()
	}
	return strings.ReplaceAll(u.String(), url.QueryEscape(Redacted), Redacted)
}
