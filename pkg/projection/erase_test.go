package projection

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/vector"
)

func TestDropErased(t *testing.T) {
	ctx := context.Background()
	const model, dim = "test-model-4", 4
	vec := []float32{1, 0, 0, 0}
	points := func() []vector.Point {
		var pts []vector.Point
		for _, user := range []string{"alice", "bob"} {
			mem := MemoryPoint(store.Memory{ID: memID(user), AccountID: "acme", UserID: user, Scope: contract.ScopeUser, Category: "fact", Text: user + " lives in Lisbon", Embedding: vec})
			pts = append(pts, mem)
			for _, session := range []string{"s1", "s2"} {
				a := store.Archive{ID: "arc-" + session, AccountID: "acme", UserID: user, SessionID: session}
				arch := ArchivePoints(a, []store.Message{{MessageID: user + "-" + session, Role: "user", Content: "hello from " + session, ArchiveID: a.ID, CreatedAt: time.Now()}})
				for i := range arch {
					arch[i].Vector = vec
				}
				pts = append(append(pts, arch...), ContextPoints(arch)...)
			}
		}
		return pts
	}
	remaining := func(v vector.Store, user string) []string {
		pts, _, err := v.Scroll(ctx, vector.Filter{AccountID: "acme", UserID: user}, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range pts {
			out = append(out, p.Kind+":"+p.Payload["session_id"])
		}
		slices.Sort(out)
		return out
	}
	cases := []struct {
		name, session string
		dropped       int
		alice, bob    []string
	}{
		{"one session: its archived messages and their context go, memories stay (memory_deleted drops those)", "s1", 2,
			[]string{"archive:s2", "context:s2", "memory:"}, []string{"archive:s1", "archive:s2", "context:s1", "context:s2", "memory:"}},
		{"the whole user: every point of theirs goes", "", 5,
			nil, []string{"archive:s1", "archive:s2", "context:s1", "context:s2", "memory:"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, err := vector.OpenLocal(t.TempDir(), model, dim)
			if err != nil {
				t.Fatal(err)
			}
			defer v.Close()
			if err := v.Upsert(ctx, model, points()); err != nil {
				t.Fatal(err)
			}
			dropped, err := DropErased(ctx, v, "acme", "alice", c.session)
			if err != nil {
				t.Fatal(err)
			}
			if dropped != c.dropped {
				t.Errorf("dropped %d points, want %d", dropped, c.dropped)
			}
			if got := remaining(v, "alice"); !slices.Equal(got, c.alice) {
				t.Errorf("alice keeps %v, want %v", got, c.alice)
			}
			if got := remaining(v, "bob"); !slices.Equal(got, c.bob) {
				t.Errorf("bob keeps %v, want %v (another user is never touched)", got, c.bob)
			}
		})
	}
}

func memID(user string) string {
	if user == "alice" {
		return "0a4f2c1d-8e9b-5c3a-b7d6-2e1f0a9b8c7d"
	}
	return "1b5f3d2e-9f0c-4d4b-a8e7-3f2a1b0c9d8e"
}
