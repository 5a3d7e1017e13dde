package store_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/membus/membus/pkg/store"
)

func TestRecallRows(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Now().UTC()
		if _, err := s.ApplyTurns(ctx, nil, []store.Turn{turn("acme", "s1", "e1", 1, msg("m1", 0, "a", t0), msg(`m"2\`, 1, "b", t0))}); err != nil {
			t.Fatal(err)
		}
		epoch, err := s.AcquireEpoch(ctx, "acme", "s1")
		if err != nil {
			t.Fatal(err)
		}
		a := store.Archive{ID: "00000000-0000-0000-0000-000000000001", AccountID: "acme", SessionID: "s1", UserID: "u1", FromSeq: 1, ToSeq: 2, Kind: "compact", RequestID: "r1"}
		if err := s.CreateArchive(ctx, epoch, a, nil); err != nil {
			t.Fatal(err)
		}
		ev := t0.Add(-time.Hour)
		mem := func(id, text string, srcs ...store.Source) store.Memory {
			return store.Memory{ID: id, AccountID: "acme", UserID: "u1", Scope: "user", Category: "fact", Value: text, Abstract: "abstract of " + text,
				Text: text, Sources: srcs, ValidFrom: t0, ContentHash: "h-" + id, Embedding: []float32{0.6, 0.8}, EmbedModel: "test-2"}
		}
		plain := mem("00000000-0000-0000-0000-0000000000aa", "plain", store.Source{SessionID: "s1", MessageID: "m1"}, store.Source{SessionID: "s1", MessageID: `m"2\`})
		plain.EventTime = &ev
		escaped := mem("00000000-0000-0000-0000-0000000000cc", "escaped <&>", store.Source{SessionID: "s1", MessageID: `m"2\`})
		old := mem("00000000-0000-0000-0000-0000000000dd", "superseded")
		old.Sources = []store.Source{{SessionID: "s1", MessageID: "m1"}}
		if err := s.SaveMemories(ctx, epoch, a, []store.Memory{plain, escaped, old}, map[string]string{old.ID: plain.ID}, nil); err != nil {
			t.Fatal(err)
		}
		ids := []string{plain.ID, "00000000-0000-0000-0000-0000000000bb", escaped.ID, old.ID}
		full, err := s.MemoriesByID(ctx, "acme", "u1", ids)
		if err != nil || len(full) != 3 {
			t.Fatalf("MemoriesByID = %+v, %v; want 3 memories", full, err)
		}
		var want []store.RecallRow
		for _, m := range full {
			if m.Active() {
				want = append(want, store.RecallRow{ID: m.ID, Scope: m.Scope, Category: m.Category, Abstract: m.Abstract, Text: m.Text,
					Sources: m.Sources, EventTime: m.EventTime, CreatedAt: m.CreatedAt})
			}
		}
		got, err := s.RecallRows(ctx, "acme", "u1", ids)
		if err != nil {
			t.Fatal(err)
		}
		byID := func(rs []store.RecallRow) map[string]store.RecallRow {
			out := map[string]store.RecallRow{}
			for _, r := range rs {
				out[r.ID] = r
			}
			return out
		}
		if len(got) != 2 || !reflect.DeepEqual(byID(got), byID(want)) {
			t.Fatalf("RecallRows (the active ones, as MemoriesByID reads them):\n got %+v\nwant %+v", got, want)
		}
		if r := byID(got)[plain.ID]; r.EventTime == nil || !r.EventTime.Equal(ev.Truncate(time.Microsecond)) || len(r.Sources) != 2 {
			t.Fatalf("plain memory read as %+v", r)
		}
		for _, tenant := range [][2]string{{"other", "u1"}, {"acme", "u2"}} {
			if foreign, err := s.RecallRows(ctx, tenant[0], tenant[1], ids); err != nil || len(foreign) != 0 {
				t.Fatalf("RecallRows of %v = %+v, %v; want none", tenant, foreign, err)
			}
		}
		if none, err := s.RecallRows(ctx, "acme", "u1", nil); err != nil || len(none) != 0 {
			t.Fatalf("RecallRows of no ids = %+v, %v", none, err)
		}
		if got, err := s.EmbeddedIDs(ctx, "test-2"); err != nil || len(got) != 2 {
			t.Fatalf("EmbeddedIDs = %v, %v; want the 2 active memories", got, err)
		}
		if got, err := s.EmbeddedIDs(ctx, "other-model"); err != nil || len(got) != 0 {
			t.Fatalf("EmbeddedIDs of another model = %v, %v; want none", got, err)
		}
	})
}

// TestDecodeSources: the sources column decodes as json.Unmarshal decodes it, whether it takes
// the direct path or not.
func TestDecodeSources(t *testing.T) {
	marshal := func(srcs ...store.Source) string {
		b, err := json.Marshal(srcs)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, tc := range []struct{ name, in string }{
		{"one", marshal(store.Source{SessionID: "s1", MessageID: "m1"})},
		{"three", marshal(store.Source{SessionID: "s1", MessageID: "m1"}, store.Source{SessionID: "s1", MessageID: "m2"}, store.Source{SessionID: "s2", MessageID: "m1"})},
		{"empty strings", marshal(store.Source{})},
		{"unicode", marshal(store.Source{SessionID: "sé", MessageID: "消息"})},
		{"escaped quote and backslash", marshal(store.Source{SessionID: `s"1`, MessageID: `m\1`})},
		{"html escaped", marshal(store.Source{SessionID: "<s>", MessageID: "a&b"})},
		{"control character", marshal(store.Source{SessionID: "s\n1", MessageID: "m\t"})},
		{"invalid UTF-8 raw", "[{\"session_id\":\"s\xff\",\"message_id\":\"m\"}]"},
		{"raw control character", "[{\"session_id\":\"s\x01\",\"message_id\":\"m\"}]"},
		{"empty list", "[]"},
		{"null", "null"},
		{"empty", ""},
		{"spaces", `[ {"session_id": "s1", "message_id": "m1"} ]`},
		{"keys swapped", `[{"message_id":"m1","session_id":"s1"}]`},
		{"extra key", `[{"session_id":"s1","message_id":"m1","x":1}]`},
		{"upper-case key", `[{"Session_ID":"s1","message_id":"m1"}]`},
		{"trailing comma", `[{"session_id":"s1","message_id":"m1"},]`},
		{"truncated", `[{"session_id":"s1","message_id":"m1"`},
		{"quote in value", `[{"session_id":"s1","message_id":"m"1"}]`},
		{"not a list", `{"session_id":"s1","message_id":"m1"}`},
		{"brace in value", `[{"session_id":"s},{1","message_id":"m1"}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want []store.Source
			_ = json.Unmarshal([]byte(tc.in), &want)
			got := store.DecodeSources([]byte(tc.in))
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("decodeSources(%q) = %#v, json.Unmarshal gives %#v", tc.in, got, want)
			}
		})
	}
}

// FuzzDecodeSources: whatever the column holds, the direct path agrees with json.Unmarshal.
func FuzzDecodeSources(f *testing.F) {
	f.Add(`[{"session_id":"s1","message_id":"m1"},{"session_id":"s2","message_id":"m2"}]`)
	f.Add(`[{"session_id":"s\"1","message_id":"m1"}]`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, in string) {
		var want []store.Source
		_ = json.Unmarshal([]byte(in), &want)
		if got := store.DecodeSources([]byte(in)); !reflect.DeepEqual(got, want) {
			t.Fatalf("decodeSources(%q) = %#v, json.Unmarshal gives %#v", in, got, want)
		}
	})
}

// TestReembedRows: OtherEmbeddings pages through the memories, in any state, whose embedding is
// of another model (or of none named), and SetEmbeddings rewrites only the embedding and model.
func TestReembedRows(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Now().UTC()
		if _, err := s.ApplyTurns(ctx, nil, []store.Turn{turn("acme", "s1", "e1", 1, msg("m1", 0, "a", t0))}); err != nil {
			t.Fatal(err)
		}
		epoch, err := s.AcquireEpoch(ctx, "acme", "s1")
		if err != nil {
			t.Fatal(err)
		}
		a := store.Archive{ID: "00000000-0000-0000-0000-000000000001", AccountID: "acme", SessionID: "s1", UserID: "u1", FromSeq: 1, ToSeq: 1, Kind: "compact", RequestID: "r1"}
		if err := s.CreateArchive(ctx, epoch, a, nil); err != nil {
			t.Fatal(err)
		}
		mems := []struct {
			id, model string
			emb       []float32
		}{
			{"00000000-0000-0000-0000-0000000000a1", "old", []float32{1, 0}},
			{"00000000-0000-0000-0000-0000000000a2", "new", []float32{0, 1}},
			{"00000000-0000-0000-0000-0000000000a3", "", []float32{1, 1}}, // an embedding without a model name
			{"00000000-0000-0000-0000-0000000000a4", "old", nil},          // no embedding: nothing to re-embed
			{"00000000-0000-0000-0000-0000000000a5", "old", []float32{1, 0}},
			{"00000000-0000-0000-0000-0000000000a6", "old", []float32{1, 0}}, // superseded below: still re-embedded
		}
		var rows []store.Memory
		for _, m := range mems {
			rows = append(rows, store.Memory{ID: m.id, AccountID: "acme", UserID: "u1", Scope: "user", Category: "fact", Value: m.id, Abstract: "a",
				Text: "text of " + m.id, Sources: []store.Source{{SessionID: "s1", MessageID: "m1"}}, ValidFrom: t0, ContentHash: "h-" + m.id,
				Embedding: m.emb, EmbedModel: m.model})
		}
		if err := s.SaveMemories(ctx, epoch, a, rows, map[string]string{mems[5].id: mems[4].id}, nil); err != nil {
			t.Fatal(err)
		}
		before, err := s.GetMemory(ctx, "acme", "u1", mems[5].id)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{mems[0].id, mems[2].id, mems[4].id, mems[5].id}
		if n, err := s.CountOtherEmbeddings(ctx, "new"); err != nil || n != len(want) {
			t.Fatalf("CountOtherEmbeddings = %d, %v; want %d", n, err, len(want))
		}
		var got []string
		for after := ""; ; {
			page, err := s.OtherEmbeddings(ctx, "new", after, 2)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			vecs := make([][]float32, len(page))
			for i, m := range page {
				if m.AccountID != "acme" || m.Text != "text of "+m.ID {
					t.Fatalf("row %+v: want account acme and its text", m)
				}
				got, vecs[i] = append(got, m.ID), []float32{0.6, 0.8}
			}
			if err := s.SetEmbeddings(ctx, "new", page, vecs); err != nil {
				t.Fatal(err)
			}
			after = page[len(page)-1].ID
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("OtherEmbeddings paged %v, want %v", got, want)
		}
		if n, err := s.CountOtherEmbeddings(ctx, "new"); err != nil || n != 0 {
			t.Fatalf("CountOtherEmbeddings after = %d, %v; want 0", n, err)
		}
		after, err := s.GetMemory(ctx, "acme", "u1", mems[5].id)
		if err != nil {
			t.Fatal(err)
		}
		if after.EmbedModel != "new" || !reflect.DeepEqual(after.Embedding, []float32{0.6, 0.8}) || !after.UpdatedAt.Equal(before.UpdatedAt) || after.Active() {
			t.Fatalf("re-embedded row = model %s, %v, updated %v (was %v), active %v; want only its embedding changed", after.EmbedModel, after.Embedding,
				after.UpdatedAt, before.UpdatedAt, after.Active())
		}
		if err := s.SetEmbeddings(ctx, "new", []store.ToReembed{{ID: mems[0].id, AccountID: "acme"}}, nil); err == nil {
			t.Fatal("SetEmbeddings with fewer vectors than memories: want an error")
		}
	})
}
