package recall

import (
	"errors"
	"slices"
	"testing"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/memory"
)

// TestListAndExportPageToTheEnd: memories.list and memories.export walk a user's memories
// page by page to the last (which has no cursor); export carries every field and leaves digests
// out; a cursor recall did not hand out is the caller's mistake.
func TestListAndExportPageToTheEnd(t *testing.T) {
	e := newEnv(t, false)
	mine := e.seed("acme", "alice",
		fact{text: "Alice lives in Lisbon."}, fact{text: "Alice has a cat named Miso."}, fact{text: "Alice works at Initech."},
		fact{scope: contract.ScopeAgent, agent: "main", category: memory.Pattern, text: "Answer Alice in Portuguese."},
		fact{category: memory.Digest, text: "This week Alice moved."})
	e.seed("acme", "bob", fact{text: "Bob likes tea."})

	var listed []string
	req := contract.MemoriesListRequest{V: 1, UserID: "alice", Limit: 2}
	for pages := 1; ; pages++ {
		resp, err := e.svc.ListMemories(e.ctx, "acme", req)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range resp.Items {
			listed = append(listed, it.ID)
		}
		if resp.NextCursor == "" {
			if pages != 3 {
				t.Errorf("%d pages of 2 for 5 memories, want 3", pages)
			}
			break
		}
		req.Cursor = resp.NextCursor
	}
	slices.Sort(listed)
	want := slices.Sorted(slices.Values(mine))
	if !slices.Equal(listed, want) {
		t.Errorf("listed %v, want alice's %v", listed, want)
	}

	var exported []contract.MemoryRecord
	req = contract.MemoriesListRequest{V: 1, UserID: "alice", Limit: 3}
	for {
		resp, err := e.svc.ExportMemories(e.ctx, "acme", req)
		if err != nil {
			t.Fatal(err)
		}
		exported = append(exported, resp.Items...)
		if resp.NextCursor == "" {
			break
		}
		req.Cursor = resp.NextCursor
	}
	if len(exported) != 4 {
		t.Fatalf("exported %d records, want alice's 4 (the digest left out)", len(exported))
	}
	for _, r := range exported {
		if err := r.Validate(); err != nil {
			t.Errorf("record %s: %v", r.ID, err)
		}
		if r.Category == memory.Digest || r.UserID != "alice" || r.AccountID != "acme" || len(r.Sources) != 1 || r.Sources[0].SessionID == "" {
			t.Errorf("record %+v: want alice's non-digest memory with its source session", r)
		}
		if (r.Scope == contract.ScopeAgent) != (r.AgentID == "main") {
			t.Errorf("record %s: scope %s, agent %q", r.ID, r.Scope, r.AgentID)
		}
	}

	for _, op := range []string{"list", "export"} {
		var err error
		bad := contract.MemoriesListRequest{V: 1, UserID: "alice", Cursor: "not-a-cursor"}
		if op == "list" {
			_, err = e.svc.ListMemories(e.ctx, "acme", bad)
		} else {
			_, err = e.svc.ExportMemories(e.ctx, "acme", bad)
		}
		if !errors.Is(err, errBadRequest) {
			t.Errorf("%s with a bad cursor: %v, want a bad request", op, err)
		}
	}
}
