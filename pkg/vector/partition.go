package vector

import (
	"cmp"
	"math"
	"slices"
	"sync"
)

// BM25 parameters.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// partition holds one (account, user) pair's points with their BM25 index.
// A search or write touches exactly one partition.
type partition struct {
	mu      sync.RWMutex
	account string
	user    string
	file    string // file name stem under the generation dir

	points   map[string]*entry
	postings map[string]map[string]int // term -> point id -> term frequency
	totalLen int                       // sum of entry.length

	// persistence state, guarded by mu
	logRecords int
	logBytes   int64
	snapBytes  int64
}

type entry struct {
	p      Point
	norm   float64
	terms  map[string]int
	length int
}

func newPartition(account, user string) *partition {
	return &partition{
		account:  account,
		user:     user,
		file:     partitionFile(account, user),
		points:   make(map[string]*entry),
		postings: make(map[string]map[string]int),
	}
}

// put inserts or replaces p. The caller holds mu for writing.
func (pt *partition) put(p Point) {
	pt.remove(p.ID)
	e := &entry{p: p, norm: norm(p.Vector), terms: make(map[string]int)}
	for _, t := range Terms(p.Text) {
		e.terms[t]++
		e.length++
	}
	for t, tf := range e.terms {
		post := pt.postings[t]
		if post == nil {
			post = make(map[string]int)
			pt.postings[t] = post
		}
		post[p.ID] = tf
	}
	pt.totalLen += e.length
	pt.points[p.ID] = e
}

// remove deletes id if present. The caller holds mu for writing.
func (pt *partition) remove(id string) {
	e, ok := pt.points[id]
	if !ok {
		return
	}
	for t := range e.terms {
		post := pt.postings[t]
		delete(post, id)
		if len(post) == 0 {
			delete(pt.postings, t)
		}
	}
	pt.totalLen -= e.length
	delete(pt.points, id)
}

// sortedPoints returns the partition's points in id order.
func (pt *partition) sortedPoints() []*Point {
	out := make([]*Point, 0, len(pt.points))
	for _, e := range pt.points {
		out = append(out, &e.p)
	}
	slices.SortFunc(out, func(a, b *Point) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// keywordScores returns the BM25 score of every matching point that has at
// least one query term. Collection statistics (N, df, average length) are
// the partition's. The caller holds mu for reading.
func (pt *partition) keywordScores(f Filter, query string) map[string]float64 {
	terms := Terms(query)
	if len(terms) == 0 || len(pt.points) == 0 {
		return nil
	}
	n := float64(len(pt.points))
	avgLen := float64(pt.totalLen) / n
	if avgLen == 0 {
		avgLen = 1
	}
	scores := make(map[string]float64)
	seen := make(map[string]bool, len(terms))
	for _, t := range terms {
		if seen[t] {
			continue
		}
		seen[t] = true
		post := pt.postings[t]
		if len(post) == 0 {
			continue
		}
		df := float64(len(post))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for id, tf := range post {
			e := pt.points[id]
			if !f.match(&e.p) {
				continue
			}
			x := float64(tf)
			scores[id] += idf * x * (bm25K1 + 1) / (x + bm25K1*(1-bm25B+bm25B*float64(e.length)/avgLen))
		}
	}
	return scores
}

// dense returns the cosine of e with the query vector (norm qn), clamped to
// [0,1].
func dense(e *entry, q []float32, qn float64) float64 {
	if qn == 0 || e.norm == 0 || len(q) != len(e.p.Vector) {
		return 0
	}
	var dot float64
	for i, x := range e.p.Vector {
		dot += float64(x) * float64(q[i])
	}
	return min(max(dot/(e.norm*qn), 0), 1)
}

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

type scored struct {
	id    string
	score float64
}

// topK returns the k highest scores, ties broken by id.
func topK(s []scored, k int) []scored {
	slices.SortFunc(s, func(a, b scored) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	if len(s) > k {
		s = s[:k]
	}
	return s
}

// search implements Store.Search on one partition. The caller holds mu for
// reading.
func (pt *partition) search(f Filter, q []float32, query string, k int) []Hit {
	qn := norm(q)
	kw := pt.keywordScores(f, query)
	pick := make(map[string]bool, 2*k)
	if len(q) > 0 {
		var ds []scored
		for id, e := range pt.points {
			if f.match(&e.p) {
				ds = append(ds, scored{id, dense(e, q, qn)})
			}
		}
		for _, s := range topK(ds, k) {
			pick[s.id] = true
		}
	}
	if len(kw) > 0 {
		ks := make([]scored, 0, len(kw))
		for id, s := range kw {
			ks = append(ks, scored{id, s})
		}
		for _, s := range topK(ks, k) {
			pick[s.id] = true
		}
	}
	hits := make([]Hit, 0, len(pick))
	for id := range pick {
		e := pt.points[id]
		hits = append(hits, Hit{ID: id, Dense: dense(e, q, qn), Keyword: kw[id], Point: copyPoint(e.p)})
	}
	slices.SortFunc(hits, func(a, b Hit) int {
		if c := cmp.Compare(b.Dense, a.Dense); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Keyword, a.Keyword); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return hits
}

// copyPoint returns p with its own vector and payload, so callers cannot
// change the index through a returned point.
func copyPoint(p Point) Point {
	p.Vector = slices.Clone(p.Vector)
	if p.Payload != nil {
		m := make(map[string]string, len(p.Payload))
		for k, v := range p.Payload {
			m[k] = v
		}
		p.Payload = m
	}
	return p
}
