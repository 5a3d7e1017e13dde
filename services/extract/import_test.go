package extract

import (
	"errors"
	"strings"
	"testing"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/memory"
	"github.com/membus/membus/pkg/store"
)

// records are a user's active memories as an export carries them.
func (e *env) records(user string) []contract.MemoryRecord {
	e.t.Helper()
	ms, err := e.st.Memories(e.ctx, store.MemoryFilter{AccountID: acct, UserID: user, ActiveOnly: true})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []contract.MemoryRecord
	for _, m := range ms {
		r := contract.MemoryRecord{V: 1, ID: m.ID, AccountID: m.AccountID, UserID: m.UserID, AgentID: m.AgentID, Scope: m.Scope,
			Category: m.Category, Subject: m.Subject, Attribute: m.Attribute, Polarity: m.Polarity, Value: m.Value, Abstract: m.Abstract,
			Text: m.Text, Importance: m.Importance, EventTime: m.EventTime, ValidFrom: m.ValidFrom, CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt}
		for _, s := range m.Sources {
			r.Sources = append(r.Sources, contract.MemorySource{SessionID: s.SessionID, MessageID: s.MessageID})
		}
		out = append(out, r)
	}
	return out
}

func (e *env) importAs(user string, recs []contract.MemoryRecord) (contract.MemoriesImportResponse, error) {
	return e.svc.Import(e.ctx, acct, contract.MemoriesImportRequest{V: 1, UserID: user, Memories: recs})
}

// TestImportRestoresAndIsIdempotent: extracted memories imported into another user become that
// user's rows (new ids, the same text, sources and times), in SQL, in the vector index and
// with a memory_upserted event each; importing them again changes nothing.
func TestImportRestoresAndIsIdempotent(t *testing.T) {
	e := newEnv(t)
	e.say("alice", "s1", "I live in Boston and I have a dog named Max.", "I really love black coffee in the morning.")
	e.commit("alice", "s1", contract.CommitSync, "c1")
	recs := e.records("alice")
	if len(recs) < 2 {
		t.Fatalf("extraction gave %d memories, want at least 2", len(recs))
	}

	res, err := e.importAs("bob", recs)
	if err != nil {
		t.Fatal(err)
	}
	if res.Created != len(recs) || res.Merged+res.Unchanged+res.Erased != 0 || len(res.IDs) != len(recs) {
		t.Fatalf("first import: %+v, want %d created", res, len(recs))
	}
	for i, r := range recs {
		id := res.IDs[i]
		if id != memory.ImportID(acct, "bob", r.ID) {
			t.Errorf("record %s became %s, want its import id", r.ID, id)
		}
		m, err := e.st.GetMemory(e.ctx, acct, "bob", id)
		if err != nil {
			t.Fatal(err)
		}
		if m.Text != r.Text || m.Category != r.Category || !m.CreatedAt.Equal(r.CreatedAt) || len(m.Sources) != len(r.Sources) {
			t.Errorf("bob's %s = %+v, want the record %+v", id, m, r)
		}
		if !e.inIndex("bob", id) {
			t.Errorf("bob's %s is not in the vector index", id)
		}
	}
	events := len(e.outboxEvents(contract.EventMemoryUpserted))

	again, err := e.importAs("bob", recs)
	if err != nil {
		t.Fatal(err)
	}
	if again.Unchanged != len(recs) || again.Created+again.Merged != 0 {
		t.Errorf("second import: %+v, want all %d unchanged", again, len(recs))
	}
	if n := len(e.outboxEvents(contract.EventMemoryUpserted)); n != events {
		t.Errorf("second import queued %d more events, want none", n-events)
	}
	home, err := e.importAs("alice", recs)
	if err != nil {
		t.Fatal(err)
	}
	if home.Unchanged != len(recs) {
		t.Errorf("import into the user it came from: %+v, want all unchanged", home)
	}
}

// TestImportRepairsTheIndexOnRetry: the rows are written, the vector write fails; the retry
// finds the rows unchanged and still indexes them.
func TestImportRepairsTheIndexOnRetry(t *testing.T) {
	e := newEnv(t)
	e.say("alice", "s1", "I live in Boston.")
	e.commit("alice", "s1", contract.CommitSync, "c1")
	recs := e.records("alice")
	e.vec.mu.Lock()
	e.vec.failUpserts = 1
	e.vec.mu.Unlock()
	if _, err := e.importAs("carol", recs); !errors.Is(err, errInjected) {
		t.Fatalf("import with the vector store down: %v, want the injected error", err)
	}
	res, err := e.importAs("carol", recs)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range res.IDs {
		if !e.inIndex("carol", id) {
			t.Errorf("carol's %s is still not indexed after the retry", id)
		}
	}
}

func TestImportRejects(t *testing.T) {
	e := newEnv(t)
	good := func() contract.MemoryRecord {
		return contract.MemoryRecord{V: 1, ID: "5d0c9a8e-3b7f-5e21-9a44-1c2d3e4f5a6b", AccountID: acct, UserID: "alice", Scope: "user",
			Category: "fact", Polarity: 1, Text: "Alice lives in Lisbon.", Importance: 0.5, CreatedAt: e.svc.d.Now()}
	}
	tests := []struct {
		name   string
		user   string
		mutate func(r *contract.MemoryRecord)
		n      int
		want   string
	}{
		{"no user", "", func(*contract.MemoryRecord) {}, 1, "user_id"},
		{"no records", "alice", nil, 0, "1–100"},
		{"too many records", "alice", func(*contract.MemoryRecord) {}, contract.MaxImportBatch + 1, "1–100"},
		{"a digest", "alice", func(r *contract.MemoryRecord) { r.Category = memory.Digest }, 1, "not a memory category"},
		{"an unknown category", "alice", func(r *contract.MemoryRecord) { r.Category = "hobby" }, 1, "not a memory category"},
		{"no text", "alice", func(r *contract.MemoryRecord) { r.Text = "" }, 1, "text is required"},
		{"an agent memory without its agent", "alice", func(r *contract.MemoryRecord) { r.Scope = "agent" }, 1, "agent_id"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var recs []contract.MemoryRecord
			for range tc.n {
				r := good()
				tc.mutate(&r)
				recs = append(recs, r)
			}
			_, err := e.importAs(tc.user, recs)
			if !errors.Is(err, contract.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want invalid naming %q", err, tc.want)
			}
		})
	}
}
