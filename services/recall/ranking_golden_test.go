package recall

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/embed"
	"github.com/membus/membus/pkg/memory"
	"github.com/membus/membus/pkg/metrics"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/testenv"
	"github.com/membus/membus/pkg/vector"
)

// goldenRanking is recall's ranked output on the seeded set of TestRecallRankingGolden, recorded
// from main at 217db84 with only the scopes' hits joined in scope order (before recall's read
// path was changed for speed: hit rows through a statement prepared once, term overlap without
// term sets, spilled vectors read once); re-recorded on branch rq4 when the neighbouring-turn
// lift's weight went from 0.9 to 0.85 (every lifted score moved; the question penalty alone
// had left it unchanged). The seeded set uses the hash embedder, for which recall neither moves
// the query away from its names nor adds the dense part after the lift (learned, query.go):
// query_test.go covers those. MEMBUS_UPDATE_GOLDEN=1 rewrites it.
const goldenRanking = "testdata/ranking_golden.txt"

// TestRecallRankingGolden: recall's ranked output — every candidate's score, score parts and
// fate (the trace), the items and the block — on a seeded user with archived sessions,
// memories of both scopes sourced in them, memories superseded or deleted in SQL whose index
// delete is pending, one deleted from both, and another user's memory in this user's index
// partition, is the same as recorded, searched exactly and through int8 codes, under every
// fusion and option. Another tenant's memories with the same texts never show.
func TestRecallRankingGolden(t *testing.T) {
	variants := []struct {
		name string
		cfg  func(*Config)
		req  func(*contract.RecallRequest)
	}{
		{"defaults", nil, nil},
		{"rrf", func(c *Config) { c.Fusion = contract.FusionRRF }, nil},
		{"dense", func(c *Config) { c.Fusion = contract.FusionDense }, nil},
		{"decay and mmr", func(c *Config) { c.Decay, c.MMR = true, true }, nil},
		{"prefer abstract, limit 20, no threshold", nil, func(r *contract.RecallRequest) {
			r.PreferAbstract, r.Limit, r.ScoreThreshold = true, 20, zero()
		}},
	}
	var out strings.Builder
	inactive := map[string]bool{} // candidates dropped as inactive in SQL (superseded, deleted, foreign)
	stray := ""
	recorded := map[string]string{} // a mode's lines by the name they are recorded under
	for _, mode := range []struct {
		name, record       string // record: the recording's mode whose lines this one gives
		exactMax, spillMin int
	}{
		{"exact", "exact", math.MaxInt, 0},
		{"quantised", "quantised", 64, math.MaxInt},
		// the vectors re-scored from the spill file instead of memory: the same lines
		{"quantised, vectors spilled", "quantised", 64, 0},
	} {
		g := newGoldenEnv(t, mode.exactMax, mode.spillMin)
		stray = g.stray
		var lines strings.Builder
		for _, v := range variants {
			cfg := Defaults()
			if v.cfg != nil {
				v.cfg(&cfg)
			}
			svc, err := New(cfg, g.deps)
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range g.queries {
				req := contract.RecallRequest{UserID: "u1", AgentID: "main", Query: q, Trace: true}
				if v.req != nil {
					v.req(&req)
				}
				resp, err := svc.Recall(context.Background(), "acme", req)
				if err != nil {
					t.Fatalf("%s/%s %q: %v", mode.name, v.name, q, err)
				}
				for _, tr := range resp.Trace {
					if strings.HasPrefix(tr.Dropped, "inactive in SQL") {
						inactive[tr.ID] = true
					}
				}
				for _, it := range resp.Items {
					if g.foreign[it.ID] || g.gone[it.ID] {
						t.Fatalf("%s/%s %q: item %s is another tenant's memory, superseded or deleted", mode.name, v.name, q, it.ID)
					}
				}
				b, err := json.Marshal(resp)
				if err != nil {
					t.Fatal(err)
				}
				sum := sha256.Sum256(b)
				fmt.Fprintf(&lines, "%s / %s / %q: %d items, %d traced, response sha256 %s\n", mode.record, v.name, q, len(resp.Items), len(resp.Trace), hex.EncodeToString(sum[:8]))
				for _, it := range resp.Items {
					fmt.Fprintf(&lines, "  %s %s %s\n", it.ID, it.Kind, strconv.FormatFloat(it.Score, 'g', -1, 64))
				}
			}
		}
		if prev, ok := recorded[mode.record]; ok {
			if prev != lines.String() {
				t.Fatalf("%s: the ranking differs from %s's", mode.name, mode.record)
			}
			continue
		}
		recorded[mode.record] = lines.String()
		out.WriteString(lines.String())
	}
	if len(inactive) < 5 || !inactive[stray] {
		t.Fatalf("%d candidates dropped as inactive in SQL (stray foreign point among them: %v): the set no longer exercises the check",
			len(inactive), inactive[stray])
	}
	if os.Getenv("MEMBUS_UPDATE_GOLDEN") == "1" {
		if err := os.MkdirAll(filepath.Dir(goldenRanking), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(goldenRanking, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(goldenRanking)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("ranked output differs from %s at line %d:\n got %s\nwant %s", goldenRanking, i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("ranked output has %d lines, %s %d", len(gl), goldenRanking, len(wl))
	}
}

type goldenEnv struct {
	deps    Deps
	queries []string
	foreign map[string]bool // ids of other tenants' memories
	gone    map[string]bool // superseded or deleted memories of the user
	stray   string          // another user's memory indexed in this user's partition
}

// goldenWords is the vocabulary of the seeded messages, memories and queries.
var goldenWords = strings.Fields(`alice bob carol dave likes loves visited moved works plays cooks painted adopted
	coffee tea cello guitar denver boston paris tokyo garden kitchen bicycle kayak python golang database
	monday weekend summer winter birthday wedding concert dog cat parrot novel poem marathon hiking pottery chess
	sister brother mother friend colleague teacher doctor`)

func goldenSentence(r *rand.Rand, n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = goldenWords[r.IntN(len(goldenWords))]
	}
	return strings.Join(ws, " ")
}

// newGoldenEnv seeds the set TestRecallRankingGolden ranks, into a local index that searches
// segments of more than exactMax points through int8 codes (their vectors spilled beyond
// spillMin). Everything is deterministic: ids, texts, clocks.
func newGoldenEnv(t *testing.T, exactMax, spillMin int) *goldenEnv {
	t.Helper()
	ctx := context.Background()
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	_, nc := testenv.NATS(t)
	names, err := bus.NewNames("")
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "membus.db"), store.WithClock(func() time.Time { return t0 }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	emb := embed.NewHash()
	lv, err := vector.OpenLocal(t.TempDir(), emb.Model(), emb.Dim(), vector.WithExactMax(exactMax), vector.WithSpillMin(spillMin))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lv.Close() })
	e := &env{t: t, ctx: ctx, names: names, st: st, emb: emb, vec: lv}
	r := rand.New(rand.NewPCG(19, 7))
	g := &goldenEnv{foreign: map[string]bool{}, gone: map[string]bool{}}

	// Memories of (account, user, agent) sourced at msgs; written in SQL under the archive and
	// indexed. Returns the memories.
	write := func(account, user string, a store.Archive, msgs []store.Message, n int, supersede map[string]string, texts []string) []store.Memory {
		epoch, err := st.AcquireEpoch(ctx, account, a.SessionID)
		if err != nil {
			t.Fatal(err)
		}
		var mems []store.Memory
		var pts []vector.Point
		for i := range n {
			text := goldenSentence(rand.New(rand.NewPCG(uint64(i), 3)), 5+i%7)
			if texts != nil {
				text = texts[i]
			}
			scope, agent, cat := contract.ScopeUser, "", memory.Categories[i%len(memory.Categories)]
			if i%5 == 0 {
				scope, agent, cat = contract.ScopeAgent, "main", memory.Decision
			}
			src := msgs[(i*7)%len(msgs)]
			c := memory.Candidate{Scope: scope, Category: cat, Subject: user, Value: text, Text: text, Polarity: 1}
			vecs, err := emb.Embed(ctx, []string{text})
			if err != nil {
				t.Fatal(err)
			}
			ev := t0.Add(-time.Duration(i) * 24 * time.Hour)
			m := store.Memory{ID: memory.ID(account, user, agent, c), AccountID: account, UserID: user, AgentID: agent, Scope: scope, Category: cat,
				Subject: user, Value: text, Text: text, Abstract: "abstract: " + memory.Abstract(text), Polarity: 1, Importance: 0.5,
				Sources: []store.Source{{SessionID: a.SessionID, MessageID: src.MessageID}}, EventTime: &ev, ValidFrom: t0,
				ContentHash: memory.ContentHash(text), Embedding: vecs[0], EmbedModel: emb.Model()}
			mems = append(mems, m)
			p := vector.Point{ID: m.ID, AccountID: account, UserID: user, AgentID: agent, Scope: scope, Kind: contract.KindMemory, Category: cat,
				Text: text, Vector: vecs[0], CreatedAt: t0}
			pts = append(pts, p)
		}
		if err := st.SaveMemories(ctx, epoch, a, mems, supersede, nil); err != nil {
			t.Fatal(err)
		}
		if err := lv.Upsert(ctx, emb.Model(), pts); err != nil {
			t.Fatal(err)
		}
		return mems
	}
	var user []store.Memory
	for s := range 3 {
		msgs := make([]store.Message, 40)
		for i := range msgs {
			msgs[i] = named([]string{"Alice", "Bob"}[i%2], goldenSentence(r, 6+r.IntN(8)))
		}
		a, stored := e.archiveSession("acme", "u1", fmt.Sprintf("s%d", s), msgs...)
		user = append(user, write("acme", "u1", a, stored, 120, nil, nil)...)
	}
	// Superseded in SQL (the new memories in a later session), deleted in SQL only, and deleted
	// from both: the first two kinds are still in the index.
	msgs := []store.Message{named("Alice", "later news"), named("Bob", "noted")}
	a, stored := e.archiveSession("acme", "u1", "s-later", msgs...)
	supersede := map[string]string{}
	var texts []string
	for i := range 10 {
		texts = append(texts, user[i*11].Text+" now changed")
	}
	newer := write("acme", "u1", a, stored, 10, nil, texts)
	for i := range newer {
		supersede[user[i*11].ID] = newer[i].ID
		g.gone[user[i*11].ID] = true
	}
	// SaveMemories supersedes in the transaction of the new memories; the archive is extracted
	// now, so the supersedes go through a second archive of their own.
	a2, stored2 := e.archiveSession("acme", "u1", "s-supersede", named("Alice", "again"))
	epoch, err := st.AcquireEpoch(ctx, "acme", a2.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	_ = stored2
	if err := st.SaveMemories(ctx, epoch, a2, nil, supersede, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		if err := st.DeleteMemory(ctx, "acme", "u1", user[5+i*13].ID, nil); err != nil {
			t.Fatal(err)
		}
		g.gone[user[5+i*13].ID] = true
	}
	for i := range 4 {
		id := user[7+i*17].ID
		if err := st.DeleteMemory(ctx, "acme", "u1", id, nil); err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		if err := lv.Delete(ctx, "acme", "u1", []string{id}); err != nil {
			t.Fatal(err)
		}
	}
	// Other tenants with the same texts; one of them indexed in u1's partition as well.
	for _, tenant := range [][2]string{{"acme", "u2"}, {"other", "u1"}} {
		fm := []store.Message{named("Alice", "foreign")}
		fa, fs := e.archiveSession(tenant[0], tenant[1], "f-"+tenant[0]+"-"+tenant[1], fm...)
		var texts []string
		for i := range 20 {
			texts = append(texts, user[i].Text)
		}
		for _, m := range write(tenant[0], tenant[1], fa, fs, 20, nil, texts) {
			g.foreign[m.ID] = true
		}
	}
	stray := user[0]
	stray.UserID = "u2"
	c := memory.Candidate{Scope: stray.Scope, Category: stray.Category, Subject: "u2", Value: stray.Text, Text: stray.Text, Polarity: 1}
	strayID := memory.ID("acme", "u2", stray.AgentID, c)
	g.stray = strayID
	if !g.foreign[strayID] {
		t.Fatalf("u2's copy of %s not seeded", stray.ID)
	}
	if err := lv.Upsert(ctx, emb.Model(), []vector.Point{{ID: strayID, AccountID: "acme", UserID: "u1", AgentID: stray.AgentID, Scope: stray.Scope,
		Kind: contract.KindMemory, Category: stray.Category, Text: stray.Text, Vector: stray.Embedding, CreatedAt: t0}}); err != nil {
		t.Fatal(err)
	}

	g.queries = []string{"when did alice move to denver", "what does bob like to cook", "favourite concert on the weekend",
		user[3].Text, user[11].Text, user[40].Text}
	for range 8 {
		g.queries = append(g.queries, "what about "+goldenSentence(r, 4))
	}
	g.deps = Deps{NC: nc, Names: names, Store: st, Embedder: emb, Vectors: lv, Metrics: metrics.New("recall", "test"),
		Now: func() time.Time { return t0.Add(48 * time.Hour) }}
	return g
}
