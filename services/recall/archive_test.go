package recall

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/membus/membus/pkg/config"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/memory"
	"github.com/membus/membus/pkg/projection"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/vector"
)

// archiveSession stores msgs in a session, archives them (one archive) and indexes each
// message as an archive point, and each speaker's session context, the way extract does (each
// message embedded alone; the keyword text without the turn before). It returns the archive and the messages.
func (e *env) archiveSession(account, user, session string, msgs ...store.Message) (store.Archive, []store.Message) {
	e.t.Helper()
	e.say(account, user, session, msgs...)
	epoch, err := e.st.AcquireEpoch(e.ctx, account, session)
	if err != nil {
		e.t.Fatal(err)
	}
	a := store.Archive{ID: memory.ArchiveID(account, session, 1, int64(len(msgs))), AccountID: account, SessionID: session, UserID: user,
		AgentID: "main", FromSeq: 1, ToSeq: int64(len(msgs)), Kind: contract.CommitSync, State: store.StateArchived, RequestID: "r-" + session}
	if err := e.st.CreateArchive(e.ctx, epoch, a, nil); err != nil {
		e.t.Fatal(err)
	}
	stored, err := e.st.MessagesBySeq(e.ctx, account, session, 1, int64(len(msgs)))
	if err != nil {
		e.t.Fatal(err)
	}
	pts := projection.ArchivePoints(a, stored)
	for i := range pts {
		v, err := e.emb.Embed(e.ctx, []string{pts[i].Text})
		if err != nil {
			e.t.Fatal(err)
		}
		pts[i].Vector = v[0]
	}
	pts = append(pts, projection.ContextPoints(pts)...)
	if err := e.vec.Upsert(e.ctx, e.emb.Model(), pts); err != nil {
		e.t.Fatal(err)
	}
	return a, stored
}

func named(name, content string) store.Message {
	return store.Message{Role: contract.RoleUser, Name: name, Content: content, Tokens: 10}
}

func TestRecallArchiveTarget(t *testing.T) {
	e := newEnv(t, false)
	_, msgs := e.archiveSession("acme", "alice", "s1",
		named("Melanie", "How was your weekend?"),
		named("Caroline", "I went to the pottery workshop in Lisbon and made a blue vase."),
		named("Melanie", "Sounds lovely, I spent mine gardening."))
	resp := e.recall("acme", contract.RecallRequest{UserID: "alice", Query: "pottery workshop vase", Trace: true})
	if len(resp.Items) == 0 {
		t.Fatal("no items")
	}
	it := resp.Items[0]
	if it.Kind != contract.KindArchive || it.Scope != contract.ScopeArchive || it.Category != "" {
		t.Fatalf("top item %+v, want an archive item", it)
	}
	if len(it.Sources) != 1 || it.Sources[0] != msgs[1].MessageID {
		t.Fatalf("sources %v, want only %s", it.Sources, msgs[1].MessageID)
	}
	if !strings.HasPrefix(it.Text, "Caroline: I went to the pottery workshop") || !strings.Contains(it.Text, "\n(after Melanie: How was your weekend?)") {
		t.Fatalf("text %q, want the message, then the line before as context", it.Text)
	}
	if !strings.Contains(resp.Block, "- [archive 2025-01-01] Caroline: I went") {
		t.Fatalf("block %q", resp.Block)
	}
	// Without the archive scope, only memories are searched.
	resp = e.recall("acme", contract.RecallRequest{UserID: "alice", Query: "pottery workshop vase", Scopes: []string{"user", "agent"}})
	if len(resp.Items) != 0 {
		t.Fatalf("items %+v without the archive scope", resp.Items)
	}
	// Another user and another account see nothing.
	for _, who := range []struct{ account, user string }{{"acme", "bob"}, {"globex", "alice"}} {
		if resp := e.recall(who.account, contract.RecallRequest{UserID: who.user, Query: "pottery workshop vase", ScoreThreshold: zero()}); len(resp.Items) != 0 {
			t.Fatalf("%s/%s sees %+v", who.account, who.user, resp.Items)
		}
	}
	// An erased session's messages are gone from SQL: its points never come back, even while
	// they are still in the index.
	if _, err := e.st.DB().ExecContext(e.ctx, "DELETE FROM messages WHERE account_id = ? AND session_id = ?", "acme", "s1"); err != nil {
		t.Fatal(err)
	}
	resp = e.recall("acme", contract.RecallRequest{UserID: "alice", Query: "pottery workshop vase", ScoreThreshold: zero(), Trace: true})
	if len(resp.Items) != 0 {
		t.Fatalf("items %+v after the session's messages were erased", resp.Items)
	}
	if len(resp.Trace) == 0 || !strings.Contains(resp.Trace[0].Dropped, "not in SQL") {
		t.Fatalf("trace %+v, want drops naming SQL", resp.Trace)
	}
}

func TestRecallCollapsesArchiveAndMemory(t *testing.T) {
	e := newEnv(t, false)
	// seed's memory is sourced from message msg-1 of session seed-1; index that message as an
	// archive point too.
	ids := e.seed("acme", "alice", fact{text: "Alice adopted a parrot named Kiwi."})
	m, err := e.st.MessagesBySeq(e.ctx, "acme", "seed-1", 1, 1)
	if err != nil || len(m) != 1 {
		t.Fatalf("seed message: %v %v", m, err)
	}
	text := memory.ArchiveMessageText(m[0].Role, m[0].Name, m[0].Content)
	v, _ := e.emb.Embed(e.ctx, []string{text})
	archID := memory.ArchiveMessageID("acme", "seed-1", m[0].MessageID)
	if err := e.vec.Upsert(e.ctx, e.emb.Model(), []vector.Point{{ID: archID, AccountID: "acme", UserID: "alice", Scope: contract.ScopeArchive,
		Kind: contract.KindArchive, Text: text, Vector: v[0], Payload: map[string]string{"session_id": "seed-1", "message_id": m[0].MessageID,
			"archive_id": m[0].ArchiveID, "seq": "1"}}}); err != nil {
		t.Fatal(err)
	}
	resp := e.recall("acme", contract.RecallRequest{UserID: "alice", Query: "parrot named Kiwi", ScoreThreshold: zero(), Trace: true})
	if len(resp.Items) != 1 {
		t.Fatalf("%d items %+v, want one slot for the message and the memory stated in it", len(resp.Items), resp.Items)
	}
	kept := resp.Items[0].ID
	other := archID
	if kept == archID {
		other = ids[0]
	}
	for _, tr := range resp.Trace {
		if tr.ID == other && !strings.Contains(tr.Dropped, "collapsed: "+kept) {
			t.Fatalf("trace of %s: %q, want collapsed into %s", other, tr.Dropped, kept)
		}
	}
}

func TestArchiveSearchAndExpand(t *testing.T) {
	e := newEnv(t, false)
	a, msgs := e.archiveSession("acme", "alice", "s1",
		named("Alice", "We signed the lease in DENVER today!\nThe movers come on Friday."),
		store.Message{Role: contract.RoleAssistant, Content: "Congratulations on Denver.", Tokens: 5},
		named("Alice", "Also I need to renew my passport."))
	e.say("acme", "alice", "s1", named("Alice", "denver again, but not archived")) // active: never searched

	cases := []struct {
		name, query string
		limit       int
		wantSeqs    []int64
		wantLines   []string
		truncated   bool
	}{
		{"case-insensitive", "denver", 0, []int64{1, 2}, []string{"We signed the lease in DENVER today!", "Congratulations on Denver."}, false},
		{"every word, across lines", "lease friday", 0, []int64{1}, []string{"We signed the lease in DENVER today!"}, false},
		{"limit", "denver", 1, []int64{1}, nil, true},
		{"no match", "zeppelin", 0, nil, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, err := e.svc.ArchiveSearch(e.ctx, "acme", contract.ArchiveSearchRequest{UserID: "alice", SessionID: "s1", Query: c.query, Limit: c.limit})
			if err != nil {
				t.Fatal(err)
			}
			var seqs []int64
			var lines []string
			for _, am := range resp.Archives {
				if am.ArchiveID != a.ID {
					t.Fatalf("archive %s, want %s", am.ArchiveID, a.ID)
				}
				for _, l := range am.Matches {
					seqs = append(seqs, l.Seq)
					lines = append(lines, l.Lines[0])
				}
			}
			if len(seqs) != len(c.wantSeqs) || resp.Truncated != c.truncated {
				t.Fatalf("seqs %v truncated %v, want %v %v", seqs, resp.Truncated, c.wantSeqs, c.truncated)
			}
			for i := range seqs {
				if seqs[i] != c.wantSeqs[i] || (c.wantLines != nil && lines[i] != c.wantLines[i]) {
					t.Fatalf("matches %v %q, want %v %q", seqs, lines, c.wantSeqs, c.wantLines)
				}
			}
		})
	}
	exp, err := e.svc.ArchiveExpand(e.ctx, "acme", contract.ArchiveExpandRequest{UserID: "alice", ArchiveID: a.ID})
	if err != nil || len(exp.Messages) != 3 || exp.Messages[0].MessageID != msgs[0].MessageID || exp.SessionID != "s1" {
		t.Fatalf("expand %+v, err %v", exp, err)
	}
	// Tenancy: another user, another account, an unknown id: not found.
	foreign := []func() error{
		func() error {
			_, err := e.svc.ArchiveExpand(e.ctx, "acme", contract.ArchiveExpandRequest{UserID: "bob", ArchiveID: a.ID})
			return err
		},
		func() error {
			_, err := e.svc.ArchiveExpand(e.ctx, "globex", contract.ArchiveExpandRequest{UserID: "alice", ArchiveID: a.ID})
			return err
		},
		func() error {
			_, err := e.svc.ArchiveExpand(e.ctx, "acme", contract.ArchiveExpandRequest{UserID: "alice", ArchiveID: "00000000-0000-0000-0000-000000000000"})
			return err
		},
		func() error {
			_, err := e.svc.ArchiveSearch(e.ctx, "acme", contract.ArchiveSearchRequest{UserID: "bob", SessionID: "s1", Query: "denver"})
			return err
		},
		func() error {
			_, err := e.svc.ArchiveSearch(e.ctx, "globex", contract.ArchiveSearchRequest{UserID: "alice", SessionID: "s1", Query: "denver"})
			return err
		},
	}
	for i, f := range foreign {
		if err := f(); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("foreign case %d: %v, want not found", i, err)
		}
	}
	if _, err := e.svc.ArchiveSearch(e.ctx, "acme", contract.ArchiveSearchRequest{UserID: "alice", SessionID: "s1"}); !errors.Is(err, errBadRequest) {
		t.Errorf("empty query: %v, want bad request", err)
	}
}

func TestConfigFrom(t *testing.T) {
	cases := []struct {
		name    string
		set     func(*config.Config)
		check   func(Config) bool
		wantErr bool
	}{
		{"defaults", func(*config.Config) {}, func(c Config) bool {
			return len(c.DefaultScopes) == 3 && !c.Decay && !c.MMR && !c.PersonQueries && c.Fusion == contract.FusionWeighted && c.CandidatesPerSide == 24
		}, false},
		{"person queries on", func(c *config.Config) { c.RecallPersonQueries = true }, func(c Config) bool { return c.PersonQueries }, false},
		{"candidates", func(c *config.Config) { c.RecallCandidates = 48 }, func(c Config) bool { return c.CandidatesPerSide == 48 }, false},
		{"scopes", func(c *config.Config) { c.RecallScopes = "user, agent" }, func(c Config) bool { return len(c.DefaultScopes) == 2 }, false},
		{"switches", func(c *config.Config) { c.RecallDecay, c.RecallMMR, c.RecallFusion = true, true, "rrf" },
			func(c Config) bool { return c.Decay && c.MMR && c.Fusion == contract.FusionRRF }, false},
		{"bad scope", func(c *config.Config) { c.RecallScopes = "user,memories" }, nil, true},
		{"bad fusion", func(c *config.Config) { c.RecallFusion = "max" }, nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			shared := config.Defaults()
			c.set(&shared)
			cfg, err := ConfigFrom(Defaults(), shared)
			if (err != nil) != c.wantErr {
				t.Fatalf("err %v, want error %v", err, c.wantErr)
			}
			if err == nil && !c.check(cfg) {
				t.Fatalf("config %+v", cfg)
			}
		})
	}
}

func TestSureArchives(t *testing.T) {
	mem := func(score float64) candidate { return candidate{kind: contract.KindMemory, score: score} }
	arch := func(score float64) candidate { return candidate{kind: contract.KindArchive, score: score} }
	cases := []struct {
		name      string
		cands     []candidate
		limit     int
		threshold float64
		want      []int
	}{
		{"none", nil, 10, 0.2, nil},
		{"memories only", []candidate{mem(0.9), mem(0.8)}, 10, 0.2, nil},
		{"every archive above the threshold", []candidate{arch(0.9), mem(0.8), arch(0.7)}, 10, 0.2, []int{0, 2}},
		{"the limit-th is the last reached for certain", []candidate{mem(0.9), arch(0.8), arch(0.7), arch(0.6)}, 3, 0.2, []int{1, 2}},
		{"below the threshold is never kept", []candidate{arch(0.9), arch(0.1), arch(0.05)}, 10, 0.2, []int{0}},
		{"at the threshold is kept", []candidate{arch(0.2)}, 10, 0.2, []int{0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := sureArchives(tc.cands, tc.limit, tc.threshold); !slices.Equal(got, tc.want) {
				t.Fatalf("sureArchives = %v, want %v", got, tc.want)
			}
		})
	}
}
