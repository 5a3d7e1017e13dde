package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/membus/membus/pkg/store"
)

// runAccount is an account of its own for each run, so a rerun against the same MariaDB
// starts empty.
func runAccount(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano())
}

// importedMemory is a memory row as ImportMemories takes it, created at t0 + minute minutes.
func importedMemory(account, user string, n, minute int) store.Memory {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	text := fmt.Sprintf("%s fact number %d", user, n)
	return store.Memory{
		ID: uuid.NewSHA1(uuid.NameSpaceOID, []byte(account+"/"+user+"/"+text)).String(), AccountID: account, UserID: user,
		Scope: "user", Category: "fact", Polarity: 1, Value: text, Abstract: text, Text: text, Importance: 0.5,
		Sources:     []store.Source{{SessionID: "s1", MessageID: fmt.Sprintf("m-%d", n)}},
		ContentHash: fmt.Sprintf("%064d", n), CreatedAt: t0.Add(time.Duration(minute) * time.Minute),
	}
}

func mustImport(t *testing.T, s *store.Store, account, user string, ms ...store.Memory) []store.ImportResult {
	t.Helper()
	res, err := s.ImportMemories(context.Background(), account, user, ms, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestImportMemories: importing is idempotent by id and by text, adds only missing sources,
// and never re-creates erased data.
func TestImportMemories(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		account := runAccount("import")
		at := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
		if _, err := s.ApplyTurns(ctx, thresholdTrigger(1<<30), []store.Turn{
			turn(account, "s-gone", "e1", 1, msg("m-gone", 0, "hello", at)),
		}); err != nil {
			t.Fatal(err)
		}
		if err := s.WriteTombstone(ctx, account, "u1", "s-gone"); err != nil {
			t.Fatal(err)
		}
		a := importedMemory(account, "u1", 1, 1)
		sameText := importedMemory(account, "u1", 1, 2)
		sameText.ID = uuid.NewString()
		sameText.Sources = []store.Source{{SessionID: "s9", MessageID: "m-9"}}
		erased := importedMemory(account, "u1", 2, 1)
		erased.Sources = []store.Source{{SessionID: "s-gone", MessageID: "m-gone"}}
		partly := importedMemory(account, "u1", 3, 1)
		partly.Sources = append(partly.Sources, store.Source{SessionID: "s-gone", MessageID: "m-gone"})

		tests := []struct {
			name string
			in   store.Memory
			want string
		}{
			{"a new memory is created", a, store.ImportCreated},
			{"the same memory again changes nothing", a, store.ImportUnchanged},
			{"the same text under another id gains its new source", sameText, store.ImportMerged},
			{"and then changes nothing", sameText, store.ImportUnchanged},
			{"a memory whose every source is erased is not restored", erased, store.ImportErased},
			{"a memory keeps only its sources outside erased sessions", partly, store.ImportCreated},
		}
		var events int
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				res, err := s.ImportMemories(ctx, account, "u1", []store.Memory{tc.in}, func(m store.Memory) store.OutboxEntry {
					events++
					return store.OutboxEntry{ID: fmt.Sprintf("evt-%s-%d", m.ID, len(m.Sources)), Subject: "membus.events.memory_upserted.x._", Payload: []byte(`{}`)}
				})
				if err != nil {
					t.Fatal(err)
				}
				if res[0].Outcome != tc.want {
					t.Fatalf("outcome %s, want %s", res[0].Outcome, tc.want)
				}
			})
		}
		if events != 3 {
			t.Errorf("%d events, want 3 (one per created or merged row)", events)
		}
		got, err := s.GetMemory(ctx, account, "u1", a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Sources) != 2 || !got.CreatedAt.Equal(a.CreatedAt) {
			t.Errorf("merged memory: sources %v, created %s; want 2 sources and the exported created_at %s", got.Sources, got.CreatedAt, a.CreatedAt)
		}
		if _, err := s.GetMemory(ctx, account, "u1", erased.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("erased memory: %v, want not found", err)
		}
		if p, err := s.GetMemory(ctx, account, "u1", partly.ID); err != nil || len(p.Sources) != 1 || p.Sources[0].SessionID != "s1" {
			t.Errorf("partly erased memory: %+v, %v; want only the source in s1", p.Sources, err)
		}

		if err := s.WriteTombstone(ctx, account, "u1", ""); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ImportMemories(ctx, account, "u1", []store.Memory{importedMemory(account, "u1", 4, 1)}, nil); !errors.Is(err, store.ErrTombstoned) {
			t.Errorf("import into an erased user: %v, want ErrTombstoned", err)
		}
		other := importedMemory(account, "u2", 5, 1)
		other.ID = a.ID
		if _, err := s.ImportMemories(ctx, account, "u2", []store.Memory{other}, nil); err == nil {
			t.Error("an id held by another user was imported over")
		}
	})
}
