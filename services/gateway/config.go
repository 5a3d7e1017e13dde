package gateway

import (
	"errors"
	"fmt"
	"net"
	"time"
)

// ErrConfig is returned (wrapped) by Validate; the message names the bad key.
var ErrConfig = errors.New("invalid gateway config")

// Config of the gateway service. Key names in errors are the config keys (flags drop the
// underscores into dashes, env vars add MEMBUS_).
type Config struct {
	Addr                  string        // http_addr, default 127.0.0.1:8080
	InsecureNoAuth        bool          // insecure_no_auth: identity from X-Membus-Account/-User; loopback only
	MaxBodyBytes          int64         // max_body_bytes, default 1 MiB
	MaxMessagesPerRequest int           // max_messages_per_request, default 100
	RPCTimeout            time.Duration // rpc_timeout, default 10s (also bounds a publish)
	CommitTimeout         time.Duration // commit_timeout: default wait of a synchronous commit, 60s
}

// Defaults returns the documented defaults.
func Defaults() Config {
	return Config{
		Addr:                  "127.0.0.1:8080",
		MaxBodyBytes:          1 << 20,
		MaxMessagesPerRequest: 100,
		RPCTimeout:            10 * time.Second,
		CommitTimeout:         60 * time.Second,
	}
}

// Validate names the bad key.
func (c Config) Validate() error {
	host, _, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return fmt.Errorf("%w: http_addr %q: %v", ErrConfig, c.Addr, err)
	}
	switch {
	case c.InsecureNoAuth && !isLoopbackHost(host):
		return fmt.Errorf("%w: insecure_no_auth is allowed only on a loopback http_addr, got %q", ErrConfig, c.Addr)
	case c.MaxBodyBytes <= 0:
		return fmt.Errorf("%w: max_body_bytes must be > 0, got %d", ErrConfig, c.MaxBodyBytes)
	case c.MaxMessagesPerRequest <= 0:
		return fmt.Errorf("%w: max_messages_per_request must be > 0, got %d", ErrConfig, c.MaxMessagesPerRequest)
	case c.RPCTimeout <= 0:
		return fmt.Errorf("%w: rpc_timeout must be > 0, got %s", ErrConfig, c.RPCTimeout)
	case c.CommitTimeout <= 0:
		return fmt.Errorf("%w: commit_timeout must be > 0, got %s", ErrConfig, c.CommitTimeout)
	}
	return nil
}

// isLoopbackHost reports whether host (from host:port) names only the loopback interface. An
// empty host means every interface, which is not loopback.
func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
