package systemtest

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/memory"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/services/membus/internal/app"
)

// seedMemories writes n memories of one user straight into SQL (the import path of the
// store), created one second apart from t0 with every fifth sharing the previous one's
// created_at, so the paging order leans on its id tie-break too.
func seedMemories(t *testing.T, env *app.Env, account, user, prefix string, n int, t0 time.Time) []string {
	t.Helper()
	var ids []string
	var batch []store.Memory
	created := t0
	for i := range n {
		if i%5 != 4 {
			created = created.Add(time.Second)
		}
		text := fmt.Sprintf("%s fact %d about %s", prefix, i, user)
		m := store.Memory{ID: memory.ImportID(account, user, text), AccountID: account, UserID: user, Scope: contract.ScopeUser,
			Category: memory.Fact, Polarity: 1, Value: text, Abstract: text, Text: text, Importance: 0.5,
			Sources: []store.Source{{SessionID: "seed", MessageID: fmt.Sprintf("%s-%d", prefix, i)}}, ContentHash: memory.ContentHash(text), CreatedAt: created}
		batch = append(batch, m)
		ids = append(ids, m.ID)
		if len(batch) == 500 || i == n-1 {
			if _, err := env.Store.ImportMemories(context.Background(), account, user, batch, nil); err != nil {
				t.Fatal(err)
			}
			batch = nil
		}
	}
	return ids
}

// TestListMemoriesPagesPastAThousand: GET /v1/memories pages with next_cursor through more
// memories than one page may hold, each exactly once even with memories written between pages;
// the user-bound RPC pages the same way; a bad cursor is a 400.
func TestListMemoriesPagesPastAThousand(t *testing.T) {
	env, base := startEmbedded(t, t.TempDir())
	const total = 1050
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	ids := seedMemories(t, env, "acme", "many", "old", total, t0)
	c := newClient(t, env, base, "acme", "many", store.RoleUser)

	list := func(query string) contract.MemoriesListResponse {
		t.Helper()
		var resp contract.MemoriesListResponse
		c.must(http.StatusOK, "GET", "/v1/memories?"+query, nil, &resp)
		return resp
	}
	for _, tc := range []struct {
		name      string
		limit     int
		wantPages int
		writeAt   int // after this page, write new memories (0: none)
	}{
		{"pages of 1000: a full page and a short last one", 1000, 2, 0},
		{"pages of 100 with memories written between pages", 100, 11, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen := map[string]int{}
			cursor, pages := "", 0
			for {
				q := url.Values{"limit": {fmt.Sprint(tc.limit)}}
				if cursor != "" {
					q.Set("cursor", cursor)
				}
				resp := list(q.Encode())
				pages++
				if len(resp.Items) == 0 || len(resp.Items) > tc.limit {
					t.Fatalf("page %d has %d items (limit %d)", pages, len(resp.Items), tc.limit)
				}
				for _, it := range resp.Items {
					seen[it.ID]++
				}
				if pages == tc.writeAt {
					// Newer than everything, older than everything, and in the middle.
					seedMemories(t, env, "acme", "many", fmt.Sprintf("new%d", tc.limit), 3, t0.Add(-time.Hour))
					seedMemories(t, env, "acme", "many", fmt.Sprintf("newer%d", tc.limit), 3, t0.Add(time.Hour))
					seedMemories(t, env, "acme", "many", fmt.Sprintf("mid%d", tc.limit), 3, t0.Add(10*time.Minute))
				}
				if resp.NextCursor == "" {
					break
				}
				cursor = resp.NextCursor
			}
			if tc.writeAt == 0 && pages != tc.wantPages {
				t.Errorf("%d pages, want %d", pages, tc.wantPages)
			}
			for _, id := range ids {
				if seen[id] != 1 {
					t.Fatalf("memory %s listed %d times, want once", id, seen[id])
				}
			}
			for id, n := range seen {
				if n != 1 {
					t.Fatalf("memory %s listed %d times", id, n)
				}
			}
		})
	}

	t.Run("the user-bound RPC pages too, for the subject's user whatever the payload says", func(t *testing.T) {
		seen := map[string]bool{}
		req := contract.MemoriesListRequest{V: 1, UserID: "mallory", Limit: 1000}
		for {
			var resp contract.MemoriesListResponse
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err := bus.Call(ctx, env.NC, env.Names.UserRPC("acme", "many", "memories.list"), req, &resp)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range resp.Items {
				seen[it.ID] = true
			}
			if resp.NextCursor == "" {
				break
			}
			req.Cursor = resp.NextCursor
		}
		for _, id := range ids {
			if !seen[id] {
				t.Fatalf("memory %s not listed over the user-bound RPC", id)
			}
		}
	})

	for _, tc := range []struct{ name, cursor, want string }{
		{"a garbled cursor", "not-a-cursor", "cursor"},
		{"an edited cursor", strings.ToUpper(list("limit=1").NextCursor), "cursor"},
		{"an over-long cursor", strings.Repeat("A", 300), "cursor"},
	} {
		t.Run(tc.name+" is a 400 that says so", func(t *testing.T) {
			code, b, _ := c.do("GET", "/v1/memories?cursor="+url.QueryEscape(tc.cursor), nil)
			if code != http.StatusBadRequest || !strings.Contains(string(b), tc.want) {
				t.Errorf("= %d %s, want 400 naming the %s", code, b, tc.want)
			}
		})
	}
}
