package store_test

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/membus/membus/pkg/store"
)

// TestMemoriesPage pages through a user's memories: every memory exactly once, in the stable
// order (created_at, then id, newest first), whatever the page size and whatever is written
// between pages.
func TestMemoriesPage(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		tests := []struct {
			name  string
			limit int
			// between writes memories while the client pages (after page 1).
			between func(account string, seeded []store.Memory) []store.Memory
		}{
			{name: "pages of one", limit: 1},
			{name: "pages of seven: a short last page", limit: 7},
			{name: "a page size equal to the count: no empty page after it", limit: 30},
			{name: "one page holds everything: no cursor", limit: 1000},
			{name: "inserts between pages, before, at and after the cursor, neither skip nor repeat a memory", limit: 4,
				between: func(account string, seeded []store.Memory) []store.Memory {
					var out []store.Memory
					// Newest (sorts before the cursor), oldest (after it), and the same created_at
					// as rows still to come (ties broken by id).
					for i, minute := range []int{100, -5, 3, 3, 3} {
						out = append(out, importedMemory(account, "u1", 1000+i, minute))
					}
					return out
				}},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				ctx := context.Background()
				account := runAccount("page")
				var seeded []store.Memory
				for i := range 30 {
					// Three rows per minute: ties on created_at are the rule, not the exception.
					seeded = append(seeded, importedMemory(account, "u1", i, i/3))
				}
				mustImport(t, s, account, "u1", seeded...)
				mustImport(t, s, account, "u2", importedMemory(account, "u2", 1, 1)) // another user: never listed

				seen := map[string]int{}
				var prev store.Memory
				cursor, pages := "", 0
				for {
					ms, next, err := s.MemoriesPage(ctx, store.MemoryFilter{AccountID: account, UserID: "u1", ActiveOnly: true, Limit: tc.limit}, cursor)
					if err != nil {
						t.Fatal(err)
					}
					pages++
					if len(ms) == 0 {
						t.Fatalf("page %d is empty (cursor %q): the page before it should have had no next cursor", pages, cursor)
					}
					if len(ms) > tc.limit {
						t.Fatalf("page %d has %d memories, limit %d", pages, len(ms), tc.limit)
					}
					for _, m := range ms {
						seen[m.ID]++
						if m.UserID != "u1" {
							t.Fatalf("listed %s of user %s", m.ID, m.UserID)
						}
						if prev.ID != "" && (m.CreatedAt.After(prev.CreatedAt) || (m.CreatedAt.Equal(prev.CreatedAt) && m.ID >= prev.ID)) {
							t.Fatalf("%s (%s) after %s (%s): not newest first by (created_at, id)", m.ID, m.CreatedAt, prev.ID, prev.CreatedAt)
						}
						prev = m
					}
					if pages == 1 && tc.between != nil {
						mustImport(t, s, account, "u1", tc.between(account, seeded)...)
					}
					if next == "" {
						break
					}
					cursor = next
				}
				for _, m := range seeded {
					if seen[m.ID] != 1 {
						t.Errorf("%q listed %d times, want once", m.Text, seen[m.ID])
					}
				}
				for id, n := range seen {
					if n != 1 {
						t.Errorf("%s listed %d times", id, n)
					}
				}
				if want := (30 + tc.limit - 1) / tc.limit; tc.between == nil && pages != want {
					t.Errorf("%d pages of %d, want %d", pages, tc.limit, want)
				}
			})
		}
	})
}

func TestMemoriesPageBadCursor(t *testing.T) {
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	backends(t, func(t *testing.T, s *store.Store) {
		account := runAccount("cursor")
		mustImport(t, s, account, "u1", importedMemory(account, "u1", 1, 1))
		for _, tc := range []struct{ name, cursor string }{
			{"not base64url", "!!!"},
			{"another format version", enc("m2.1.abc")},
			{"no id", enc("m1.1.")},
			{"time not a number", enc("m1.yesterday.abc")},
			{"negative time", enc("m1.-5.abc")},
			{"missing parts", enc("m1")},
			{"too long", strings.Repeat("A", 300)},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, _, err := s.MemoriesPage(context.Background(), store.MemoryFilter{AccountID: account, UserID: "u1", Limit: 10}, tc.cursor)
				if !errors.Is(err, store.ErrBadCursor) {
					t.Fatalf("err = %v, want ErrBadCursor", err)
				}
			})
		}
	})
}

func TestMemoryCursorRoundTrip(t *testing.T) {
	c := store.MemoryCursor{CreatedUS: 1741968140000000, ID: "7e6d5c4b-3a29-5817-8f6e-5d4c3b2a1908"}
	got, err := store.ParseMemoryCursor(c.String())
	if err != nil || got != c {
		t.Fatalf("ParseMemoryCursor(%q) = %+v, %v; want %+v", c.String(), got, err, c)
	}
}
