package store_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/membus/membus/pkg/store"
)

func TestMemoriesByIDNoEmbedding(t *testing.T) {
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
		mem := store.Memory{ID: "00000000-0000-0000-0000-0000000000aa", AccountID: "acme", UserID: "u1", Scope: "user", Category: "fact",
			Value: "x", Abstract: "x", Text: "x", Sources: []store.Source{{SessionID: "s1", MessageID: "m1"}}, ValidFrom: t0, ContentHash: "h",
			Embedding: []float32{0.6, 0.8}, EmbedModel: "test-2"}
		if err := s.SaveMemories(ctx, epoch, a, []store.Memory{mem}, nil, nil); err != nil {
			t.Fatal(err)
		}
		ids := []string{mem.ID, "00000000-0000-0000-0000-0000000000bb"}
		full, err := s.MemoriesByID(ctx, "acme", "u1", ids)
		if err != nil || len(full) != 1 || len(full[0].Embedding) != 2 {
			t.Fatalf("MemoriesByID = %+v, %v; want the memory with its embedding", full, err)
		}
		light, err := s.MemoriesByIDNoEmbedding(ctx, "acme", "u1", ids)
		if err != nil || len(light) != 1 {
			t.Fatalf("MemoriesByIDNoEmbedding = %+v, %v; want the memory", light, err)
		}
		if light[0].Embedding != nil {
			t.Fatalf("embedding read: %v", light[0].Embedding)
		}
		want := full[0]
		want.Embedding = nil
		if !reflect.DeepEqual(light[0], want) {
			t.Fatalf("without the embedding, the rest differs:\n got %+v\nwant %+v", light[0], want)
		}
		if foreign, err := s.MemoriesByIDNoEmbedding(ctx, "other", "u1", ids); err != nil || len(foreign) != 0 {
			t.Fatalf("foreign account = %+v, %v; want none", foreign, err)
		}
		if got, err := s.EmbeddedIDs(ctx, "test-2"); err != nil || len(got) != 1 || got[0] != mem.ID {
			t.Fatalf("EmbeddedIDs = %v, %v; want [%s]", got, err, mem.ID)
		}
		if got, err := s.EmbeddedIDs(ctx, "other-model"); err != nil || len(got) != 0 {
			t.Fatalf("EmbeddedIDs of another model = %v, %v; want none", got, err)
		}
	})
}
