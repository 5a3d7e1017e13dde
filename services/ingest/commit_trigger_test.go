package ingest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/store"
)

func TestCommitTrigger(t *testing.T) {
	names, _ := bus.NewNames("membus")
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	trigger := commitTrigger(names, 2000, func() time.Time { return at })
	own, keep := 5000, 3
	base := store.Pending{AccountID: "acme", SessionID: "s1", UserID: "u1", AgentID: "main", NewestSeq: 12, CommitRequestedUpto: 4}
	with := func(f func(*store.Pending)) store.Pending { p := base; f(&p); return p }
	for _, tc := range []struct {
		name string
		p    store.Pending
		want int64 // requested upto; 0: no commit
	}{
		{"below the threshold: no commit", with(func(p *store.Pending) { p.UnrequestedTokens = 1999 }), 0},
		{"reaching the threshold requests a commit up to the newest seq", with(func(p *store.Pending) { p.UnrequestedTokens = 2000 }), 12},
		{"the session's own threshold wins over the default", with(func(p *store.Pending) { p.UnrequestedTokens = 4000; p.Threshold = &own }), 0},
		{"nothing stored since the last request: no commit (edge, not level)", with(func(p *store.Pending) { p.UnrequestedTokens = 9000; p.CommitRequestedUpto = 12 }), 0},
		{"a threshold of 0 never commits", with(func(p *store.Pending) { zero := 0; p.UnrequestedTokens = 9000; p.Threshold = &zero }), 0},
		{"keep_recent of the session travels with the request", with(func(p *store.Pending) { p.UnrequestedTokens = 2500; p.KeepRecent = &keep }), 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			upto, entries, err := trigger(tc.p)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == 0 {
				if len(entries) != 0 {
					t.Fatalf("commit requested: %+v", entries)
				}
				return
			}
			if upto != tc.want || len(entries) != 1 {
				t.Fatalf("upto %d, %d entries; want %d and one", upto, len(entries), tc.want)
			}
			e := entries[0]
			var req contract.CommitRequest
			if err := json.Unmarshal(e.Payload, &req); err != nil {
				t.Fatal(err)
			}
			if err := req.Validate(); err != nil {
				t.Fatalf("request does not validate: %v", err)
			}
			if req.Kind != contract.CommitAuto || req.Upto != tc.want || req.UserID != "u1" || !req.CreatedAt.Equal(at) ||
				e.ID != req.RequestID || e.Subject != names.Commits("acme", "s1") {
				t.Errorf("entry %s on %s: %+v", e.ID, e.Subject, req)
			}
			if (tc.p.KeepRecent == nil) != (req.KeepRecent == nil) || (req.KeepRecent != nil && *req.KeepRecent != keep) {
				t.Errorf("keep_recent %v, want the session's %v", req.KeepRecent, tc.p.KeepRecent)
			}
			if _, again, _ := trigger(tc.p); again[0].ID != e.ID {
				t.Errorf("request id %s then %s: not deterministic", e.ID, again[0].ID)
			}
		})
	}
}
