package qdrant_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	qc "github.com/qdrant/go-client/qdrant"

	"github.com/membus/membus/pkg/testenv"
	"github.com/membus/membus/pkg/vector"
	"github.com/membus/membus/pkg/vector/qdrant"
	"github.com/membus/membus/pkg/vector/qdrant/qdranttest"
	"github.com/membus/membus/pkg/vector/vectortest"
)

// testCollection is the collection of the tests against the fake server.
const testCollection = "membus_memories"

func fakeConfig(srv *qdranttest.Server) qdrant.Config {
	return qdrant.Config{
		URL:         srv.URL(),
		Collection:  testCollection,
		Model:       vectortest.Model,
		Dim:         vectortest.Dim,
		DialOptions: srv.DialOptions(),
	}
}

func open(t *testing.T, cfg qdrant.Config) *qdrant.Store {
	t.Helper()
	s, err := qdrant.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("open qdrant store: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestFakeConformance(t *testing.T) {
	srv := qdranttest.Start(t)
	vectortest.Run(t, func(t *testing.T) vector.Store { return open(t, fakeConfig(srv)) })
}

func TestFakeReopen(t *testing.T) {
	srv := qdranttest.Start(t)
	cfg := fakeConfig(srv)
	vectortest.RunReopen(t,
		func(t *testing.T) vector.Store { return open(t, cfg) },
		func(t *testing.T, s vector.Store) vector.Store {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			return open(t, cfg)
		})
}

// TestRealQdrant runs the same suite against a real Qdrant, in a collection
// of its own that is dropped afterwards.
func TestRealQdrant(t *testing.T) {
	url := testenv.Qdrant(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	cfg := qdrant.Config{URL: url, Collection: "membus_test_" + hex.EncodeToString(b[:]), Model: vectortest.Model, Dim: vectortest.Dim}
	open(t, cfg) // creates the collection
	t.Cleanup(func() { dropCollection(url, cfg.Collection) })
	vectortest.Run(t, func(t *testing.T) vector.Store { return open(t, cfg) })
	vectortest.RunReopen(t,
		func(t *testing.T) vector.Store { return open(t, cfg) },
		func(t *testing.T, s vector.Store) vector.Store {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			return open(t, cfg)
		})
	other := cfg
	other.Model = "another-model-8"
	if _, err := qdrant.Open(context.Background(), other); !errors.Is(err, vector.ErrModelMismatch) {
		t.Fatalf("open with another model: err = %v, want ErrModelMismatch", err)
	}
}

func rawClient(t *testing.T, srv *qdranttest.Server) *qc.Client {
	t.Helper()
	c, err := qc.NewClient(&qc.Config{Host: "127.0.0.1", GrpcOptions: srv.DialOptions(), SkipCompatibilityCheck: true, PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestCollectionShape(t *testing.T) {
	srv := qdranttest.Start(t)
	open(t, fakeConfig(srv))
	info, err := rawClient(t, srv).GetCollectionInfo(context.Background(), testCollection)
	if err != nil {
		t.Fatal(err)
	}
	params := info.GetConfig().GetParams()
	dense := params.GetVectorsConfig().GetParamsMap().GetMap()["dense"]
	if dense.GetSize() != vectortest.Dim || dense.GetDistance() != qc.Distance_Cosine {
		t.Errorf("dense vector: %v", dense)
	}
	if m := params.GetSparseVectorsConfig().GetMap()["bm25"].GetModifier(); m != qc.Modifier_Idf {
		t.Errorf("bm25 modifier = %v, want Idf", m)
	}
	if got := info.GetConfig().GetMetadata()["membus_embed_model"].GetStringValue(); got != vectortest.Model {
		t.Errorf("stored model %q", got)
	}
	for field, tenant := range map[string]bool{"account_id": true, "user_id": false, "agent_id": false, "scope": false, "kind": false, "category": false} {
		ix := info.GetPayloadSchema()[field]
		if ix.GetDataType() != qc.PayloadSchemaType_Keyword {
			t.Errorf("%s index: %v", field, ix)
			continue
		}
		if got := ix.GetParams().GetKeywordIndexParams().GetIsTenant(); got != tenant {
			t.Errorf("%s is_tenant = %v, want %v", field, got, tenant)
		}
	}
}

func TestOpenChecksModel(t *testing.T) {
	srv := qdranttest.Start(t)
	open(t, fakeConfig(srv))
	tests := []struct {
		name    string
		model   string
		dim     int
		wantErr error
	}{
		{"another model is refused", "other-model-8", vectortest.Dim, vector.ErrModelMismatch},
		{"another dimension is refused", vectortest.Model, 16, vector.ErrModelMismatch},
		{"the same model and dimension open", vectortest.Model, vectortest.Dim, nil},
		{"no model adopts the stored one", "", 0, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := fakeConfig(srv)
			cfg.Model, cfg.Dim = tc.model, tc.dim
			s, err := qdrant.Open(context.Background(), cfg)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			defer s.Close()
			if s.Model() != vectortest.Model || s.Dim() != vectortest.Dim {
				t.Fatalf("opened %s/%d", s.Model(), s.Dim())
			}
		})
	}
	t.Run("no model and no collection is ErrNoCollection", func(t *testing.T) {
		cfg := fakeConfig(srv)
		cfg.Model, cfg.Dim, cfg.Collection = "", 0, "missing"
		if _, err := qdrant.Open(context.Background(), cfg); !errors.Is(err, qdrant.ErrNoCollection) {
			t.Fatalf("err = %v, want ErrNoCollection", err)
		}
	})
}

func TestTenantFilterOnEveryPrefetch(t *testing.T) {
	srv := qdranttest.Start(t)
	s := open(t, fakeConfig(srv))
	ctx := context.Background()
	p := vector.Point{ID: uuid.NewString(), AccountID: "acct-a", UserID: "alice", Scope: "user", Kind: "memory",
		Text: "dentist appointment on friday", Vector: []float32{1, 0, 0, 0, 0, 0, 0, 0}}
	if err := s.Upsert(ctx, vectortest.Model, []vector.Point{p}); err != nil {
		t.Fatal(err)
	}
	f := vector.Filter{AccountID: "acct-a", UserID: "alice", Scopes: []string{"user"}}
	if _, err := s.Search(ctx, f, p.Vector, "dentist", 5); err != nil {
		t.Fatal(err)
	}
	qs := srv.Queries()
	if len(qs) == 0 || len(qs[0].GetPrefetch()) != 2 {
		t.Fatalf("want a hybrid query with two prefetches first, got %v", qs)
	}
	var filters []*qc.Filter
	for _, q := range qs {
		filters = append(filters, q.GetFilter())
		for _, pf := range q.GetPrefetch() {
			filters = append(filters, pf.GetFilter())
		}
	}
	for i, fl := range filters {
		var acct, user bool
		for _, c := range fl.GetMust() {
			m := c.GetField()
			switch {
			case m.GetKey() == "account_id" && m.GetMatch().GetKeyword() == "acct-a":
				acct = true
			case m.GetKey() == "user_id" && m.GetMatch().GetKeyword() == "alice":
				user = true
			}
		}
		if !acct || !user {
			t.Errorf("filter %d lacks the tenant must-match: %v", i, fl)
		}
	}
}

// TestKeywordScoreIsBM25 checks the sparse design end to end: Qdrant's IDF
// times the client's term-frequency part is BM25 with the collection's N
// and document frequencies and the recorded average length.
func TestKeywordScoreIsBM25(t *testing.T) {
	srv := qdranttest.Start(t)
	s := open(t, fakeConfig(srv))
	ctx := context.Background()
	texts := []string{"cabin wifi password hunter2", "cabin in the woods", "grocery list", "weather report"}
	var pts []vector.Point
	for i, txt := range texts {
		v := make([]float32, vectortest.Dim)
		v[i] = 1
		pts = append(pts, vector.Point{ID: uuid.NewString(), AccountID: "a", UserID: "u", Text: txt, Vector: v})
	}
	if err := s.Upsert(ctx, vectortest.Model, pts); err != nil {
		t.Fatal(err)
	}
	hits, err := s.Search(ctx, vector.Filter{AccountID: "a", UserID: "u"}, nil, "cabin password", 10)
	if err != nil {
		t.Fatal(err)
	}
	bm25 := func(tf, docLen, n, df float64) float64 {
		idf := math.Log((n-df+0.5)/(df+0.5) + 1)
		return idf * tf * 2.2 / (tf + 1.2*(1-0.75+0.75*docLen/qdrant.DefaultBM25AvgLen))
	}
	want := map[string]float64{
		pts[0].ID: bm25(1, 4, 4, 2) + bm25(1, 4, 4, 1), // cabin + password
		pts[1].ID: bm25(1, 2, 4, 2),                    // cabin ("in", "the" are stop words)
	}
	if len(hits) != len(want) {
		t.Fatalf("hits %v, want the two cabin notes", hits)
	}
	for _, h := range hits {
		if math.Abs(h.Keyword-want[h.ID]) > 1e-4 {
			t.Errorf("%s keyword score %v, want %v", h.Point.Text, h.Keyword, want[h.ID])
		}
		if h.Dense != 0 {
			t.Errorf("keyword-only search gave dense %v", h.Dense)
		}
	}
}

func TestInvalidPointsAreRefused(t *testing.T) {
	srv := qdranttest.Start(t)
	s := open(t, fakeConfig(srv))
	ctx := context.Background()
	good := vector.Point{ID: uuid.NewString(), AccountID: "a", UserID: "u", Vector: make([]float32, vectortest.Dim)}
	tests := []struct {
		name string
		edit func(p *vector.Point)
	}{
		{"an id that is not a UUID", func(p *vector.Point) { p.ID = "memory-17" }},
		{"an unsigned integer id (membus ids are UUIDs)", func(p *vector.Point) { p.ID = "17" }},
		{"a vector of the wrong dimension", func(p *vector.Point) { p.Vector = []float32{1, 2, 3} }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := good
			tc.edit(&p)
			if err := s.Upsert(ctx, vectortest.Model, []vector.Point{p}); !errors.Is(err, vector.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
		})
	}
	if _, err := s.Search(ctx, vector.Filter{AccountID: "a", UserID: "u"}, []float32{1}, "", 3); !errors.Is(err, vector.ErrInvalid) {
		t.Fatalf("short query vector: err = %v", err)
	}
	if _, _, err := s.Scroll(ctx, vector.Filter{AccountID: "a", UserID: "u"}, "not-a-cursor", 3); !errors.Is(err, vector.ErrInvalid) {
		t.Fatalf("bad cursor: err = %v", err)
	}
}

func TestUpperCaseIDIsLowerCased(t *testing.T) {
	srv := qdranttest.Start(t)
	s := open(t, fakeConfig(srv))
	ctx := context.Background()
	id := uuid.New()
	p := vector.Point{ID: strings.ToUpper(id.String()), AccountID: "a", UserID: "u", Vector: make([]float32, vectortest.Dim)}
	if err := s.Upsert(ctx, vectortest.Model, []vector.Point{p}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "a", "u", p.ID)
	if err != nil || got.ID != id.String() {
		t.Fatalf("get %s: %+v %v", p.ID, got, err)
	}
}

func TestQdrantDown(t *testing.T) {
	srv := qdranttest.New()
	cfg := fakeConfig(srv)
	cfg.Timeout = 2 * time.Second
	s := open(t, cfg)
	ctx := context.Background()
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("ping of a running server: %v", err)
	}
	srv.Close()
	if err := s.Ping(ctx); err == nil {
		t.Fatal("ping of a stopped server succeeded")
	}
	_, err := s.Search(ctx, vector.Filter{AccountID: "a", UserID: "u"}, make([]float32, vectortest.Dim), "x", 3)
	if err == nil {
		t.Fatal("search against a stopped server succeeded")
	}
	if _, err := s.Count(ctx, "a"); err == nil {
		t.Fatal("count against a stopped server succeeded")
	}
	if err := s.Upsert(ctx, vectortest.Model, []vector.Point{{ID: uuid.NewString(), AccountID: "a", UserID: "u",
		Vector: make([]float32, vectortest.Dim)}}); err == nil {
		t.Fatal("upsert against a stopped server succeeded")
	}
}

// TestQdrantDownAndBack: while the server cannot be reached, Ping and every call fail; once it
// answers again, so do they, with the data it held.
func TestQdrantDownAndBack(t *testing.T) {
	srv := qdranttest.Start(t)
	cfg := fakeConfig(srv)
	cfg.Timeout = 2 * time.Second
	s := open(t, cfg)
	ctx := context.Background()
	p := vector.Point{ID: uuid.NewString(), AccountID: "a", UserID: "u", Vector: make([]float32, vectortest.Dim)}
	p.Vector[0] = 1
	if err := s.Upsert(ctx, vectortest.Model, []vector.Point{p}); err != nil {
		t.Fatal(err)
	}
	srv.SetDown(true)
	if err := s.Ping(ctx); err == nil {
		t.Error("ping while the server is down succeeded")
	}
	if _, err := s.Get(ctx, "a", "u", p.ID); err == nil {
		t.Error("get while the server is down succeeded")
	}
	srv.SetDown(false)
	if err := s.Ping(ctx); err != nil {
		t.Errorf("ping once the server is back: %v", err)
	}
	if got, err := s.Get(ctx, "a", "u", p.ID); err != nil || got.ID != p.ID {
		t.Errorf("get once the server is back: %+v %v, want the point written before", got, err)
	}
}

func TestClosedStore(t *testing.T) {
	srv := qdranttest.Start(t)
	s := open(t, fakeConfig(srv))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Count(context.Background(), "a"); !errors.Is(err, vector.ErrClosed) {
		t.Fatalf("err = %v, want ErrClosed", err)
	}
}
