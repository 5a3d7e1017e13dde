package ingest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/services/ingest"
)

// An OpenClaw event is stored under the storage id and agent id of docs/design.md §3; the publisher names
// the subject after the storage id.
func TestOpenClawIdentityMapping(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *store.Store) {
		h := newHarness(t, st)
		cfg := ingest.Defaults()
		cfg.AgentPrefix = "acme"
		h.start(cfg)
		ev := event("3F2504E0-4F89-11D3-9A0C-0305E82C3301", "oc-1", msg("oc-m", 0, "user", "hello from telegram", baseTime))
		ev.Source = contract.SourceOpenClaw
		ev.SessionKey = "agent:coder:telegram:42"
		storage := contract.OpenClawSessionID(ev.SessionID, ev.SessionKey)
		if storage != "3f2504e0-4f89-11d3-9a0c-0305e82c3301" {
			t.Fatalf("storage id %q", storage)
		}
		h.publishRaw(h.names.Turns(ev.AccountID, storage), "d-oc", mustJSON(t, ev))
		h.settled(30 * time.Second)
		got := h.history("acme", storage)
		if len(got) != 1 {
			t.Fatalf("stored %d messages under the storage id, want 1 (DLQ: %+v)", len(got), h.dlq())
		}
		sess, err := st.GetSession(t.Context(), "acme", storage)
		if err != nil {
			t.Fatal(err)
		}
		if sess.AgentID != "acme_coder" {
			t.Fatalf("agent id = %q, want acme_coder", sess.AgentID)
		}
	})
}

// Extra redaction patterns apply, and every redaction is counted.
func TestRedactionsCounted(t *testing.T) {
	c, err := ingest.NewCapturer([]string{`ACME-[0-9]{6}`})
	if err != nil {
		t.Fatal(err)
	}
	m := msg("m1", 0, "user", "my badge is ACME-123456 and password=hunter2, key sk-abcdefghijklmnopqrstuvwx", baseTime)
	sm, n, ok := c.Capture(m)
	if !ok {
		t.Fatal("message dropped")
	}
	for _, secret := range []string{"ACME-123456", "hunter2", "sk-abcdefghijklmnopqrstuvwx"} {
		if strings.Contains(sm.Content, secret) || strings.Contains(string(sm.Parts), secret) {
			t.Errorf("%q survived: %s", secret, sm.Content)
		}
	}
	if n != 3 {
		t.Fatalf("redactions = %d, want 3", n)
	}
	if _, err := ingest.NewCapturer([]string{"("}); err == nil || !strings.Contains(err.Error(), "redact_patterns") {
		t.Fatalf("bad pattern error = %v, want one naming redact_patterns", err)
	}
}
