package qdranttest_test

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/membus/membus/pkg/vector/qdrant/qdranttest"
)

const col = "c"

func setup(t *testing.T) *qdrant.Client {
	t.Helper()
	srv := qdranttest.Start(t)
	c, err := qdrant.NewClient(&qdrant.Config{Host: "127.0.0.1", GrpcOptions: srv.DialOptions(), SkipCompatibilityCheck: true, PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	err = c.CreateCollection(context.Background(), &qdrant.CreateCollection{
		CollectionName: col,
		VectorsConfig:  qdrant.NewVectorsConfigMap(map[string]*qdrant.VectorParams{"d": {Size: 2, Distance: qdrant.Distance_Cosine}}),
		SparseVectorsConfig: qdrant.NewSparseVectorsConfig(map[string]*qdrant.SparseVectorParams{
			"s": {Modifier: qdrant.Modifier_Idf.Enum()}, "raw": {}}),
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func code(err error) codes.Code { return status.Code(err) }

func upsert(t *testing.T, c *qdrant.Client, pts ...*qdrant.PointStruct) {
	t.Helper()
	if _, err := c.Upsert(context.Background(), &qdrant.UpsertPoints{CollectionName: col, Points: pts}); err != nil {
		t.Fatal(err)
	}
}

func pt(id *qdrant.PointId, payload map[string]any, vecs map[string]*qdrant.Vector) *qdrant.PointStruct {
	return &qdrant.PointStruct{Id: id, Payload: qdrant.NewValueMap(payload), Vectors: qdrant.NewVectorsMap(vecs)}
}

func TestPointIDs(t *testing.T) {
	c := setup(t)
	ctx := context.Background()
	u := uuid.New()
	tests := []struct {
		name string
		id   *qdrant.PointId
		want codes.Code
	}{
		{"a UUID is accepted", qdrant.NewIDUUID(u.String()), codes.OK},
		{"an unsigned integer is accepted", qdrant.NewIDNum(42), codes.OK},
		{"an arbitrary string is refused", qdrant.NewIDUUID("memory-17"), codes.InvalidArgument},
		{"a missing id is refused", nil, codes.InvalidArgument},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Upsert(ctx, &qdrant.UpsertPoints{CollectionName: col, Points: []*qdrant.PointStruct{
				pt(tc.id, nil, map[string]*qdrant.Vector{"d": qdrant.NewVectorDense([]float32{1, 0})})}})
			if code(err) != tc.want {
				t.Fatalf("code %v (%v), want %v", code(err), err, tc.want)
			}
		})
	}
	got, err := c.Get(ctx, &qdrant.GetPoints{CollectionName: col, Ids: []*qdrant.PointId{qdrant.NewIDUUID(toUpper(u.String()))}})
	if err != nil || len(got) != 1 || got[0].GetId().GetUuid() != u.String() {
		t.Fatalf("upper-case UUID lookup: %v %v", got, err)
	}
	// integers order before UUIDs
	res, err := c.Scroll(ctx, &qdrant.ScrollPoints{CollectionName: col})
	if err != nil || len(res) != 2 || res[0].GetId().GetNum() != 42 {
		t.Fatalf("scroll order: %v %v", res, err)
	}
}

func toUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

func TestUnknownCollection(t *testing.T) {
	c := setup(t)
	ctx := context.Background()
	calls := map[string]func() error{
		"info": func() error { _, err := c.GetCollectionInfo(ctx, "nope"); return err },
		"upsert": func() error {
			_, err := c.Upsert(ctx, &qdrant.UpsertPoints{CollectionName: "nope"})
			return err
		},
		"query": func() error {
			_, err := c.Query(ctx, &qdrant.QueryPoints{CollectionName: "nope", Query: qdrant.NewQueryDense([]float32{1, 0})})
			return err
		},
		"scroll": func() error { _, err := c.Scroll(ctx, &qdrant.ScrollPoints{CollectionName: "nope"}); return err },
		"count":  func() error { _, err := c.Count(ctx, &qdrant.CountPoints{CollectionName: "nope"}); return err },
	}
	for name, call := range calls {
		if err := call(); code(err) != codes.NotFound {
			t.Errorf("%s: code %v (%v), want NotFound", name, code(err), err)
		}
	}
	if ok, err := c.CollectionExists(ctx, "nope"); ok || err != nil {
		t.Errorf("exists(nope) = %v, %v", ok, err)
	}
	if ok, err := c.CollectionExists(ctx, col); !ok || err != nil {
		t.Errorf("exists(%s) = %v, %v", col, ok, err)
	}
	err := c.CreateCollection(ctx, &qdrant.CreateCollection{CollectionName: col,
		VectorsConfig: qdrant.NewVectorsConfig(&qdrant.VectorParams{Size: 2, Distance: qdrant.Distance_Cosine})})
	if code(err) != codes.AlreadyExists {
		t.Errorf("create twice: %v", err)
	}
}

func TestMustFilter(t *testing.T) {
	c := setup(t)
	ctx := context.Background()
	v := map[string]*qdrant.Vector{"d": qdrant.NewVectorDense([]float32{1, 0})}
	upsert(t, c,
		pt(qdrant.NewIDNum(1), map[string]any{"account_id": "a", "user_id": "u", "tags": []any{"x", "y"}}, v),
		pt(qdrant.NewIDNum(2), map[string]any{"account_id": "a", "user_id": "v"}, v),
		pt(qdrant.NewIDNum(3), map[string]any{"account_id": "b", "user_id": "u"}, v),
	)
	tests := []struct {
		name string
		f    *qdrant.Filter
		want []uint64
	}{
		{"every must condition has to match", &qdrant.Filter{Must: []*qdrant.Condition{
			qdrant.NewMatchKeyword("account_id", "a"), qdrant.NewMatchKeyword("user_id", "u")}}, []uint64{1}},
		{"a keyword matches any element of a list", &qdrant.Filter{Must: []*qdrant.Condition{qdrant.NewMatchKeyword("tags", "y")}}, []uint64{1}},
		{"keywords match any of the values", &qdrant.Filter{Must: []*qdrant.Condition{qdrant.NewMatchKeywords("user_id", "v", "w")}}, []uint64{2}},
		{"a missing field never matches", &qdrant.Filter{Must: []*qdrant.Condition{qdrant.NewMatchKeyword("agent_id", "")}}, nil},
		{"must_not excludes", &qdrant.Filter{MustNot: []*qdrant.Condition{qdrant.NewMatchKeyword("account_id", "a")}}, []uint64{3}},
		{"should needs one", &qdrant.Filter{Should: []*qdrant.Condition{
			qdrant.NewMatchKeyword("user_id", "v"), qdrant.NewMatchKeyword("account_id", "b")}}, []uint64{2, 3}},
		{"has_id inside must", &qdrant.Filter{Must: []*qdrant.Condition{
			qdrant.NewMatchKeyword("account_id", "a"), qdrant.NewHasID(qdrant.NewIDNum(2), qdrant.NewIDNum(3))}}, []uint64{2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, err := c.Count(ctx, &qdrant.CountPoints{CollectionName: col, Filter: tc.f})
			if err != nil || n != uint64(len(tc.want)) {
				t.Fatalf("count %d, %v; want %d", n, err, len(tc.want))
			}
			res, err := c.Query(ctx, &qdrant.QueryPoints{CollectionName: col, Query: qdrant.NewQueryDense([]float32{1, 0}),
				Using: qdrant.PtrOf("d"), Filter: tc.f})
			if err != nil {
				t.Fatal(err)
			}
			var got []uint64
			for _, r := range res {
				got = append(got, r.GetId().GetNum())
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("query: %v want %v", got, tc.want)
			}
		})
	}
	_, err := c.Count(ctx, &qdrant.CountPoints{CollectionName: col, Filter: &qdrant.Filter{Must: []*qdrant.Condition{
		qdrant.NewRange("n", &qdrant.Range{Gt: qdrant.PtrOf(1.0)})}}})
	if code(err) != codes.Unimplemented {
		t.Fatalf("an unsupported condition must be an error, got %v", err)
	}
}

func TestScores(t *testing.T) {
	c := setup(t)
	ctx := context.Background()
	dense := func(x, y float32) *qdrant.Vector { return qdrant.NewVectorDense([]float32{x, y}) }
	sparse := func(idx []uint32, val []float32) *qdrant.Vector { return qdrant.NewVectorSparse(idx, val) }
	upsert(t, c,
		pt(qdrant.NewIDNum(1), nil, map[string]*qdrant.Vector{"d": dense(3, 4), "s": sparse([]uint32{7, 9}, []float32{1, 2}), "raw": sparse([]uint32{7}, []float32{0.5})}),
		pt(qdrant.NewIDNum(2), nil, map[string]*qdrant.Vector{"d": dense(1, 0), "s": sparse([]uint32{7}, []float32{1}), "raw": sparse([]uint32{7}, []float32{2})}),
		pt(qdrant.NewIDNum(3), nil, map[string]*qdrant.Vector{"d": dense(-1, 0), "s": sparse([]uint32{5}, []float32{1})}),
	)
	t.Run("cosine vectors are stored normalised", func(t *testing.T) {
		got, err := c.Get(ctx, &qdrant.GetPoints{CollectionName: col, Ids: []*qdrant.PointId{qdrant.NewIDNum(1)}, WithVectors: qdrant.NewWithVectors(true)})
		if err != nil {
			t.Fatal(err)
		}
		d := got[0].GetVectors().GetVectors().GetVectors()["d"].GetDenseVector().GetData()
		if math.Abs(float64(d[0])-0.6) > 1e-6 || math.Abs(float64(d[1])-0.8) > 1e-6 {
			t.Fatalf("stored %v, want [0.6 0.8]", d)
		}
	})
	t.Run("dense: descending cosine", func(t *testing.T) {
		res, err := c.Query(ctx, &qdrant.QueryPoints{CollectionName: col, Query: qdrant.NewQueryDense([]float32{2, 0}), Using: qdrant.PtrOf("d")})
		if err != nil {
			t.Fatal(err)
		}
		want := []struct {
			id    uint64
			score float32
		}{{2, 1}, {1, 0.6}, {3, -1}}
		for i, w := range want {
			if res[i].GetId().GetNum() != w.id || math.Abs(float64(res[i].GetScore()-w.score)) > 1e-6 {
				t.Fatalf("rank %d: %v, want %+v", i, res[i], w)
			}
		}
	})
	t.Run("sparse with IDF: only overlapping points, idf-weighted dot", func(t *testing.T) {
		res, err := c.Query(ctx, &qdrant.QueryPoints{CollectionName: col, Query: qdrant.NewQuerySparse([]uint32{7, 9}, []float32{1, 1}), Using: qdrant.PtrOf("s")})
		if err != nil {
			t.Fatal(err)
		}
		idf := func(n, df float64) float64 { return math.Log((n-df+0.5)/(df+0.5) + 1) }
		want1 := idf(3, 2)*1 + idf(3, 1)*2
		want2 := idf(3, 2) * 1
		if len(res) != 2 || res[0].GetId().GetNum() != 1 || res[1].GetId().GetNum() != 2 ||
			math.Abs(float64(res[0].GetScore())-want1) > 1e-5 || math.Abs(float64(res[1].GetScore())-want2) > 1e-5 {
			t.Fatalf("got %v, want 1:%v 2:%v", res, want1, want2)
		}
	})
	t.Run("sparse without modifier: plain dot", func(t *testing.T) {
		res, err := c.Query(ctx, &qdrant.QueryPoints{CollectionName: col, Query: qdrant.NewQuerySparse([]uint32{7}, []float32{3}), Using: qdrant.PtrOf("raw")})
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 2 || res[0].GetId().GetNum() != 2 || res[0].GetScore() != 6 || res[1].GetScore() != 1.5 {
			t.Fatalf("got %v", res)
		}
	})
	t.Run("prefetch and RRF fusion: union of both sides", func(t *testing.T) {
		res, err := c.Query(ctx, &qdrant.QueryPoints{CollectionName: col,
			Prefetch: []*qdrant.PrefetchQuery{
				{Query: qdrant.NewQueryDense([]float32{-1, 0}), Using: qdrant.PtrOf("d"), Limit: qdrant.PtrOf(uint64(1))},
				{Query: qdrant.NewQuerySparse([]uint32{9}, []float32{1}), Using: qdrant.PtrOf("s"), Limit: qdrant.PtrOf(uint64(1))},
			},
			Query: qdrant.NewQueryFusion(qdrant.Fusion_RRF)})
		if err != nil {
			t.Fatal(err)
		}
		var got []uint64
		for _, r := range res {
			got = append(got, r.GetId().GetNum())
		}
		slices.Sort(got)
		if !slices.Equal(got, []uint64{1, 3}) {
			t.Fatalf("fused %v, want [1 3]", got)
		}
		// Qdrant's formula: 1/(rank + k) with the 0-based rank and k = 2, so the first of one
		// list scores 1/2.
		for _, r := range res {
			if math.Abs(float64(r.GetScore())-0.5) > 1e-6 {
				t.Fatalf("RRF score of the first of one list = %v, want 1/(0+2) = 0.5", r.GetScore())
			}
		}
	})
	t.Run("wrong dimension is refused", func(t *testing.T) {
		_, err := c.Query(ctx, &qdrant.QueryPoints{CollectionName: col, Query: qdrant.NewQueryDense([]float32{1, 0, 0}), Using: qdrant.PtrOf("d")})
		if code(err) != codes.InvalidArgument {
			t.Fatalf("err %v", err)
		}
		_, err = c.Upsert(ctx, &qdrant.UpsertPoints{CollectionName: col, Points: []*qdrant.PointStruct{
			pt(qdrant.NewIDNum(9), nil, map[string]*qdrant.Vector{"s": sparse([]uint32{1, 1}, []float32{1, 1})})}})
		if code(err) != codes.InvalidArgument {
			t.Fatalf("duplicate sparse indices: err %v", err)
		}
	})
}

func TestScrollOffsetIsInclusive(t *testing.T) {
	c := setup(t)
	ctx := context.Background()
	for i := uint64(1); i <= 5; i++ {
		upsert(t, c, pt(qdrant.NewIDNum(i), nil, nil))
	}
	res, next, err := c.ScrollAndOffset(ctx, &qdrant.ScrollPoints{CollectionName: col, Offset: qdrant.NewIDNum(2), Limit: qdrant.PtrOf(uint32(2))})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].GetId().GetNum() != 2 || res[1].GetId().GetNum() != 3 || next.GetNum() != 4 {
		t.Fatalf("page %v next %v", res, next)
	}
}
