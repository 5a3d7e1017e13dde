package gateway

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/membus/membus/pkg/config"
	"github.com/membus/membus/pkg/contract"
)

// ErrConfig is returned (wrapped) by Validate; the message names the bad key.
var ErrConfig = errors.New("invalid gateway config")

// Config of the gateway service. Addr, InsecureNoAuth, RateLimit and RateBurst are set from
// the shared configuration (http_addr, insecure_no_auth, rate_limit, rate_burst: a flag, a
// MEMBUS_* variable or a YAML key each); the other fields are fixed limits of this build, with
// the defaults below. The shared keys' defaults and rules are pkg/config's, so a setting has
// one home (pkg/config cannot import a service). Errors name the field.
type Config struct {
	Addr                  string        // http_addr, default config.DefaultHTTPAddr
	InsecureNoAuth        bool          // insecure_no_auth: identity from X-Membus-Account/-User; loopback only
	MaxBodyBytes          int64         // largest request body, 1 MiB
	MaxMessagesPerRequest int           // most messages in one append, 100
	RPCTimeout            time.Duration // bound of one bus request (and of a publish), 10s
	CommitTimeout         time.Duration // default wait of a synchronous commit, contract.DefaultCommitTimeout
	MaxQueryChars         int           // longest recall/forget query in characters, 4000 (over → 413)
	RateLimit             float64       // rate_limit: requests per second per API key (token bucket refill), default config.DefaultRateLimit
	RateBurst             int           // rate_burst: bucket size per API key, default config.DefaultRateBurst
	IdempotencyTTL        time.Duration // how long a write's first answer is kept for its Idempotency-Key, 24h
	TLS                   *tls.Config   // tls_cert, tls_key: serve HTTPS; nil: plain HTTP
}

// Defaults returns the documented defaults.
func Defaults() Config {
	return Config{
		Addr:                  config.DefaultHTTPAddr,
		MaxBodyBytes:          1 << 20,
		MaxMessagesPerRequest: 100,
		RPCTimeout:            10 * time.Second,
		CommitTimeout:         contract.DefaultCommitTimeout,
		MaxQueryChars:         4000,
		RateLimit:             config.DefaultRateLimit,
		RateBurst:             config.DefaultRateBurst,
		IdempotencyTTL:        24 * time.Hour,
	}
}

// Validate names the bad key.
func (c Config) Validate() error {
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return fmt.Errorf("%w: http_addr %q: %w", ErrConfig, c.Addr, err)
	}
	if err := config.CheckRateLimit(c.RateLimit); err != nil {
		return fmt.Errorf("%w: rate_limit: %w", ErrConfig, err)
	}
	if err := config.CheckRateBurst(c.RateBurst); err != nil {
		return fmt.Errorf("%w: rate_burst: %w", ErrConfig, err)
	}
	switch {
	case c.InsecureNoAuth && !config.IsLoopback(c.Addr):
		return fmt.Errorf("%w: insecure_no_auth is allowed only on a loopback http_addr, got %q", ErrConfig, c.Addr)
	case c.MaxBodyBytes <= 0:
		return fmt.Errorf("%w: max_body_bytes must be > 0, got %d", ErrConfig, c.MaxBodyBytes)
	case c.MaxMessagesPerRequest <= 0:
		return fmt.Errorf("%w: max_messages_per_request must be > 0, got %d", ErrConfig, c.MaxMessagesPerRequest)
	case c.RPCTimeout <= 0:
		return fmt.Errorf("%w: rpc_timeout must be > 0, got %s", ErrConfig, c.RPCTimeout)
	case c.CommitTimeout <= 0:
		return fmt.Errorf("%w: commit_timeout must be > 0, got %s", ErrConfig, c.CommitTimeout)
	case c.MaxQueryChars <= 0:
		return fmt.Errorf("%w: max_query_chars must be > 0, got %d", ErrConfig, c.MaxQueryChars)
	case c.IdempotencyTTL <= 0:
		return fmt.Errorf("%w: idempotency_ttl must be > 0, got %s", ErrConfig, c.IdempotencyTTL)
	}
	return nil
}
