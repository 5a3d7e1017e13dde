package ingest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/membus/membus/pkg/store"
)

// TestPartition checks how a batch is split between transactions: every turn in exactly one
// part, a session's turns in one part and in delivery order, the message indexes kept beside
// their turns, parts in partition order and none empty.
func TestPartition(t *testing.T) {
	turn := func(account, session string, i int) store.Turn {
		return store.Turn{AccountID: account, SessionID: session, EventID: fmt.Sprintf("e%d", i)}
	}
	many := func(sessions, turns int) []store.Turn {
		var out []store.Turn
		for i := range turns {
			out = append(out, turn("acme", fmt.Sprintf("s-%03d", i%sessions), i))
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		turns     []store.Turn
		n         int
		wantParts int // -1: any number from 2 to n
	}{
		{"one partition keeps the batch whole", many(50, 400), 1, 1},
		{"zero means one", many(5, 20), 0, 1},
		{"one session is one part", many(1, 30), 4, 1},
		{"fifty sessions over two parts", many(50, 400), 2, 2},
		{"fifty sessions over four parts", many(50, 400), 4, -1},
		{"a trailing space is the same session on MySQL", []store.Turn{turn("acme", "s1", 0), turn("acme", "s1 ", 1), turn("acme", "s1  ", 2)}, 8, 1},
		{"accounts apart", []store.Turn{turn("a", "s", 0), turn("b", "s", 1), turn("c", "s", 2), turn("d", "s", 3), turn("a", "s", 4)}, 3, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			idx := make([]int, len(tc.turns))
			for i := range idx {
				idx[i] = 3*i + 1 // messages' indexes in the fetched batch differ from the turns'
			}
			parts := partition(tc.turns, idx, tc.n)
			if tc.wantParts >= 0 && len(parts) != tc.wantParts {
				t.Fatalf("%d parts, want %d", len(parts), tc.wantParts)
			}
			if tc.wantParts < 0 && (len(parts) < 2 || len(parts) > tc.n) {
				t.Fatalf("%d parts, want 2 to %d", len(parts), tc.n)
			}
			seen := map[string]int{}  // event id → part
			where := map[string]int{} // session → part
			for p, part := range parts {
				if len(part.turns) == 0 || len(part.turns) != len(part.idx) {
					t.Fatalf("part %d: %d turns, %d indexes", p, len(part.turns), len(part.idx))
				}
				var order []int
				for k, tr := range part.turns {
					var i int
					fmt.Sscanf(tr.EventID, "e%d", &i)
					if part.idx[k] != 3*i+1 {
						t.Errorf("part %d: turn %s carries index %d, want %d", p, tr.EventID, part.idx[k], 3*i+1)
					}
					if _, dup := seen[tr.EventID]; dup {
						t.Errorf("turn %s in two parts", tr.EventID)
					}
					seen[tr.EventID] = p
					key := tr.AccountID + "/" + trimSpaces(tr.SessionID)
					if q, ok := where[key]; ok && q != p {
						t.Errorf("session %s in parts %d and %d", key, q, p)
					}
					where[key] = p
					order = append(order, i)
				}
				if !slices.IsSorted(order) {
					t.Errorf("part %d: turns out of delivery order: %v", p, order)
				}
			}
			if len(seen) != len(tc.turns) {
				t.Errorf("%d of %d turns in a part", len(seen), len(tc.turns))
			}
		})
	}
	// Every worker splits the same way: the same session always lands in the same partition.
	a := partition(many(50, 100), make([]int, 100), 2)
	b := partition(many(50, 100)[50:], make([]int, 50), 2)
	for p := range a {
		if a[p].turns[0].SessionID != b[p].turns[0].SessionID {
			t.Errorf("part %d starts with %s in one batch, %s in the other", p, a[p].turns[0].SessionID, b[p].turns[0].SessionID)
		}
	}
}

func trimSpaces(s string) string {
	for len(s) > 0 && s[len(s)-1] == ' ' {
		s = s[:len(s)-1]
	}
	return s
}
