package config

import (
	"fmt"
	"net"
	"strings"
	"time"
)

// Defaults and rules of the keys that one service reads. A service's Config starts from these
// and its Validate applies these rules, so each default and each rule has one home: here,
// because a service's module depends on pkg and pkg/config cannot import a service. The limits
// of the payloads (commit token threshold, keep_recent, commit timeout, recall scopes and
// fusion) live in pkg/contract; the runner's in pkg/bus.
const (
	// DefaultHTTPAddr is the gateway's listen address (http_addr).
	DefaultHTTPAddr = "127.0.0.1:8080"
	// DefaultRateLimit and DefaultRateBurst are the gateway's token bucket per API key
	// (rate_limit requests per second, rate_burst requests).
	DefaultRateLimit = 20
	DefaultRateBurst = 40
	// DefaultIdleCommit is how long a session may go without a new turn before ingest commits
	// it whole (idle_commit).
	DefaultIdleCommit = 30 * time.Minute
)

// CheckRateLimit is the rule of rate_limit: requests per second per API key.
func CheckRateLimit(perSecond float64) error {
	if perSecond <= 0 {
		return fmt.Errorf("must be positive, got %g", perSecond)
	}
	return nil
}

// CheckRateBurst is the rule of rate_burst: the bucket size per API key.
func CheckRateBurst(n int) error {
	if n < 1 {
		return fmt.Errorf("must be at least 1, got %d", n)
	}
	return nil
}

// CheckIdleCommit is the rule of idle_commit once parsed: 0 (off) or positive.
func CheckIdleCommit(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("must not be negative, got %s", d)
	}
	return nil
}

// IsLoopback reports whether a host:port address listens on loopback only, the rule of
// insecure_no_auth. An empty host means every interface, which is not loopback.
func IsLoopback(addr string) bool {
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

// formatDuration writes a default duration as an operator would type it: "30m", not "30m0s".
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
