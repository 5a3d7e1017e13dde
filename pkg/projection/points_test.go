package projection

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/embed"
	"github.com/membus/membus/pkg/memory"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/vector"
)

func TestArchivePoints(t *testing.T) {
	a := store.Archive{ID: "a1", AccountID: "acme", SessionID: "s1", UserID: "alice", AgentID: "main"}
	msgs := []store.Message{
		{Seq: 1, MessageID: "m1", Role: contract.RoleUser, Name: "Caroline", Content: "I went hiking.", ArchiveID: "a1"},
		{Seq: 2, MessageID: "m2", Role: contract.RoleAssistant, Content: "Where?", ArchiveID: "a1"},
		{Seq: 3, MessageID: "m3", Role: contract.RoleUser, Content: "   ", ArchiveID: "a1"},            // no text
		{Seq: 4, MessageID: "m4", Role: contract.RoleSystem, Content: "be brief", ArchiveID: "a1"},     // not history
		{Seq: 5, MessageID: "m5", Role: contract.RoleUser, Content: "not this archive", ArchiveID: ""}, // still active
	}
	pts := ArchivePoints(a, msgs)
	if len(pts) != 2 {
		t.Fatalf("%d points, want 2", len(pts))
	}
	p := pts[0]
	if p.ID != memory.ArchiveMessageID("acme", "s1", "m1") || p.Kind != contract.KindArchive || p.Scope != contract.ScopeArchive ||
		p.Text != "Caroline: I went hiking." || p.UserID != "alice" || p.Payload["message_id"] != "m1" || p.Payload["seq"] != "1" || p.Payload["archive_id"] != "a1" || p.Payload["speaker"] != "Caroline" {
		t.Fatalf("point %+v", p)
	}
	if pts[1].Text != "assistant: Where?" || pts[1].Payload["speaker"] != "assistant" {
		t.Fatalf("unnamed message text %q, want the role as speaker", pts[1].Text)
	}
	if memory.ArchiveMessageID("acme", "s1", "m1") == memory.ArchiveMessageID("acme", "s2", "m1") {
		t.Fatal("archive message ids collide across sessions")
	}
}

func TestMemoryPoint(t *testing.T) {
	day := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name    string
		m       store.Memory
		kind    string
		payload map[string]string
	}{
		{"a memory", store.Memory{ID: "m1", Category: memory.Fact, Text: "x"}, contract.KindMemory, nil},
		{"a digest names its period and bucket", store.Memory{ID: "d1", Category: memory.Digest, Value: "week 2026-W49", EventTime: &day}, contract.KindDigest,
			map[string]string{"period": "week", "bucket": "2026-W49"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := MemoryPoint(c.m)
			if p.Kind != c.kind || fmt.Sprint(p.Payload) != fmt.Sprint(c.payload) {
				t.Fatalf("point kind %q payload %v, want %q %v", p.Kind, p.Payload, c.kind, c.payload)
			}
		})
	}
}

func TestWithPreviousTurn(t *testing.T) {
	pt := func(account, session, archive, text string) vector.Point {
		return vector.Point{AccountID: account, Text: text, Payload: map[string]string{"session_id": session, "archive_id": archive}}
	}
	long := strings.Repeat("word ", 100) // 500 bytes: cut to previousTurnChars
	cases := []struct {
		name string
		pts  []vector.Point
		want []string
	}{
		{"none", nil, []string{}},
		{"first point has no previous turn", []vector.Point{pt("acme", "s1", "a1", "Melanie: What did you paint?")},
			[]string{"Melanie: What did you paint?"}},
		{"each point carries the one before, never more", []vector.Point{
			pt("acme", "s1", "a1", "Melanie: What did you paint?"),
			pt("acme", "s1", "a1", "Caroline: A sunset."),
			pt("acme", "s1", "a1", "Melanie: Lovely!"),
		}, []string{"Melanie: What did you paint?", "Caroline: A sunset.\nMelanie: What did you paint?", "Melanie: Lovely!\nCaroline: A sunset."}},
		{"another archive, session or account starts afresh", []vector.Point{
			pt("acme", "s1", "a1", "one"),
			pt("acme", "s1", "a2", "two"),
			pt("acme", "s2", "a2", "three"),
			pt("other", "s2", "a2", "four"),
			pt("other", "s2", "a2", "five"),
		}, []string{"one", "two", "three", "four", "five\nfour"}},
		{"the previous turn's spaces collapse", []vector.Point{pt("acme", "s1", "a1", "a\n\n  b"), pt("acme", "s1", "a1", "c")},
			[]string{"a\n\n  b", "c\na b"}},
		{"a long previous turn is cut", []vector.Point{pt("acme", "s1", "a1", long), pt("acme", "s1", "a1", "c")},
			[]string{long, "c\n" + strings.TrimSpace(long)[:previousTurnChars]}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			withPreviousTurn(c.pts)
			got := make([]string, 0, len(c.pts))
			for _, p := range c.pts {
				got = append(got, p.Text)
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("texts = %q, want %q", got, c.want)
			}
		})
	}
}

// The vectors come from each message's own text; only the keyword text carries the turn before.
func TestEmbedArchivePoints(t *testing.T) {
	a := store.Archive{ID: "a1", AccountID: "acme", SessionID: "s1", UserID: "alice", AgentID: "main"}
	pts := ArchivePoints(a, []store.Message{
		{Seq: 1, MessageID: "m1", Role: contract.RoleUser, Name: "Melanie", Content: "What did you paint?", ArchiveID: "a1"},
		{Seq: 2, MessageID: "m2", Role: contract.RoleUser, Name: "Caroline", Content: "A sunset.", ArchiveID: "a1"},
	})
	e := embed.NewHash()
	if err := embedArchivePoints(context.Background(), e, pts); err != nil {
		t.Fatal(err)
	}
	own, err := e.Embed(context.Background(), []string{"Melanie: What did you paint?", "Caroline: A sunset."})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range pts {
		if !slices.Equal(p.Vector, own[i]) {
			t.Errorf("point %d embedded from another text than its own", i)
		}
	}
	if pts[1].Text != "Caroline: A sunset.\nMelanie: What did you paint?" {
		t.Fatalf("keyword text %q, want the message then the turn before", pts[1].Text)
	}
}

// Each speaker of each archive gets one context point: the unit mean of their messages' vectors.
func TestContextPoints(t *testing.T) {
	a := store.Archive{ID: "a1", AccountID: "acme", SessionID: "s1", UserID: "alice", AgentID: "main"}
	b := store.Archive{ID: "a2", AccountID: "acme", SessionID: "s1", UserID: "alice", AgentID: "main"}
	pts := append(ArchivePoints(a, []store.Message{
		{Seq: 1, MessageID: "m1", Role: contract.RoleUser, Name: "Caroline", Content: "I went hiking.", ArchiveID: "a1"},
		{Seq: 2, MessageID: "m2", Role: contract.RoleAssistant, Content: "Where?", ArchiveID: "a1"},
		{Seq: 3, MessageID: "m3", Role: contract.RoleUser, Name: "Caroline", Content: "In the hills.", ArchiveID: "a1"},
	}), ArchivePoints(b, []store.Message{
		{Seq: 4, MessageID: "m4", Role: contract.RoleUser, Name: "Caroline", Content: "Back home.", ArchiveID: "a2"},
	})...)
	withVectors := func(vs ...[]float32) []vector.Point {
		out := slices.Clone(pts)
		for i := range out {
			out[i].Vector = vs[i]
		}
		return out
	}
	cases := []struct {
		name string
		pts  []vector.Point
		want map[string][]float32 // speaker@archive -> vector
	}{
		{"the unit mean of a speaker's vectors, per archive", withVectors([]float32{1, 0}, []float32{0, 1}, []float32{1, 0}, []float32{0, 2}),
			map[string][]float32{"Caroline@a1": {1, 0}, "assistant@a1": {0, 1}, "Caroline@a2": {0, 1}}},
		{"two directions average", withVectors([]float32{3, 0}, []float32{0, 1}, []float32{0, 3}, []float32{1, 0}),
			map[string][]float32{"Caroline@a1": {float32(math.Sqrt(0.5)), float32(math.Sqrt(0.5))}, "assistant@a1": {0, 1}, "Caroline@a2": {1, 0}}},
		{"not embedded yet: ids without vectors", pts,
			map[string][]float32{"Caroline@a1": nil, "assistant@a1": nil, "Caroline@a2": nil}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ContextPoints(c.pts)
			if len(got) != len(c.want) {
				t.Fatalf("%d context points, want %d", len(got), len(c.want))
			}
			for _, p := range got {
				k := p.Payload["speaker"] + "@" + p.Payload["archive_id"]
				want, ok := c.want[k]
				if !ok {
					t.Fatalf("unexpected context point %s", k)
				}
				if p.ID != memory.ContextID("acme", "s1", p.Payload["archive_id"], p.Payload["speaker"]) || p.Scope != ScopeContext ||
					p.Kind != KindContext || p.Text != "" || p.UserID != "alice" || p.Payload["session_id"] != "s1" {
					t.Fatalf("context point %+v", p)
				}
				if len(want) != len(p.Vector) {
					t.Fatalf("%s vector %v, want %v", k, p.Vector, want)
				}
				for i := range want {
					if math.Abs(float64(want[i]-p.Vector[i])) > 1e-6 {
						t.Fatalf("%s vector %v, want %v", k, p.Vector, want)
					}
				}
			}
		})
	}
}
