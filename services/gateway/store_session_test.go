package gateway

import (
	"strings"
	"testing"

	"github.com/membus/membus/pkg/bus"
)

// TestStoreSession: the side session of POST /v1/memories is one per user and agent, and the
// OpenClaw plugin's memory_store computes the same id (clients/openclaw test/unit/tools.test.js
// holds this value too), so a user's stored memories share one session whichever way they came.
func TestStoreSession(t *testing.T) {
	for _, tc := range []struct{ user, agent, want string }{
		{"default", "coder", "membus-store-coder-9de9b79782167497"},
		{"alice", "coder", "membus-store-coder-" + bus.MsgID("store-session", "alice")[:16]},
		{"default", strings.Repeat("a", 60), "membus-store-" + strings.Repeat("a", 34) + "-9de9b79782167497"},
	} {
		if got := storeSession(tc.user, tc.agent); got != tc.want || len(got) > 64 {
			t.Errorf("storeSession(%q, %q) = %q, want %q (at most 64 characters)", tc.user, tc.agent, got, tc.want)
		}
	}
}
