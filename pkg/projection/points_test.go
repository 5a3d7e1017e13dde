package projection

import (
	"fmt"
	"testing"
	"time"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/memory"
	"github.com/membus/membus/pkg/store"
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
		p.Text != "Caroline: I went hiking." || p.UserID != "alice" || p.Payload["message_id"] != "m1" || p.Payload["seq"] != "1" || p.Payload["archive_id"] != "a1" {
		t.Fatalf("point %+v", p)
	}
	if pts[1].Text != "assistant: Where?" {
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
