package vector

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"
)

// BM25 parameters.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// Layout and search tuning.
const (
	// blockPoints vectors share one contiguous block of floats: a scan
	// walks memory in order, and growing a segment never copies vectors.
	blockPoints = 1024
	// denseMargin extra candidates are kept by the float32 scan and
	// re-scored exactly (float64), so rounding in the scan cannot change
	// which k points win.
	denseMargin = 16
	// parallelMinPoints: a dense scan over at least this many points is
	// split across the CPUs. A quantised point counts for 1/quantCost of
	// one: its codes scan about 14x faster (BenchmarkDotsInt8 against
	// BenchmarkDot32), and splitting a scan of a millisecond only adds the
	// wait for the slower goroutine.
	parallelMinPoints = 16 * blockPoints
	quantCost         = 8
)

// partition holds one (account, user) pair's points with their BM25 index.
// A search or write touches exactly one partition. Points are kept in one
// segment per scope, so a search of one scope scans only that scope's
// points; BM25 statistics (N, df, average length) stay partition-wide.
type partition struct {
	mu      sync.RWMutex
	account string
	user    string
	file    string // file name stem under the generation dir

	// exactMax: a segment with more points is quantised (segment_vectors.go); spillMin: a
	// quantised one with more points spills its vectors under spillDir ("": never).
	exactMax int
	spillMin int
	spillDir string

	ids      map[string]ref // point id -> where it is
	segs     []*segment     // one per scope, in first-seen order
	termIDs  map[string]int32
	df       []int32 // by term id: points holding the term, all segments
	n        int     // points, all segments
	docs     int     // points with at least one term: BM25's corpus (a point without text is no document)
	totalLen int     // sum of pointMeta.length
	strs     map[string]string
	terms    []termFreq // put's scratch

	// persistence state, guarded by mu
	logRecords int
	logBytes   int64
	snapBytes  int64
}

type ref struct {
	seg int32
	i   int32
}

// segment holds the points of one scope: vectors in contiguous blocks (once
// quantised, int8 codes in blocks too, and beyond the spill minimum the
// vectors in a spill file instead: segment_vectors.go), metadata and BM25
// postings indexed by the point's position. A removal moves the last point
// into the hole.
type segment struct {
	scope    string
	dim      int
	blocks   []vecBlock  // blockPoints vectors each (nil when spilled)
	quant    bool        // searched through codes
	codes    []codeBlock // quantised: blockPoints codes each
	scale    []float32   // quantised: the codes' scale by position (quantise)
	spill    *spillFile  // spilled: the float32 vectors by position
	noSpill  bool        // a spill failed: the vectors stay in blocks
	err      error       // a spilled vector could not be read back: searches fail with it
	norms    []float64   // L2 norm of each vector
	inv      []float32   // 1/norm (0 for a zero vector), for the scan
	meta     []pointMeta
	lens     []int32     // pointMeta.length by position, for BM25 over the postings
	scores   sync.Pool   // *kwScratch of the segment's length, for keyword searches
	postings [][]posting // by term id
}

// pointMeta is a point without its vector. Agent, kind and category are
// interned per partition.
type pointMeta struct {
	id        string
	agent     string
	kind      string
	category  string
	text      string
	payload   map[string]string // nil when empty
	createdAt time.Time
	length    int32 // BM25 terms, repeats counted
}

type termFreq struct{ term, tf int32 }

type posting struct{ i, tf int32 }

// newPartition returns an empty partition whose segments of more than
// exactMax points are quantised, and of more than spillMin (and exactMax)
// points have their vectors spilled under spillDir ("" keeps every
// segment exact).
func newPartition(account, user string, exactMax, spillMin int, spillDir string) *partition {
	return &partition{
		account:  account,
		user:     user,
		file:     partitionFile(account, user),
		exactMax: exactMax,
		spillMin: spillMin,
		spillDir: spillDir,
		ids:      make(map[string]ref),
		termIDs:  make(map[string]int32),
		strs:     make(map[string]string),
	}
}

func (pt *partition) intern(s string) string {
	if s == "" {
		return ""
	}
	if v, ok := pt.strs[s]; ok {
		return v
	}
	pt.strs[s] = s
	return s
}

// segment returns the segment of scope, creating it when create is set.
func (pt *partition) segment(scope string, create bool) (int32, *segment) {
	for i, s := range pt.segs {
		if s.scope == scope {
			return int32(i), s
		}
	}
	if !create {
		return -1, nil
	}
	s := &segment{scope: pt.intern(scope)}
	pt.segs = append(pt.segs, s)
	return int32(len(pt.segs) - 1), s
}

func (s *segment) len() int { return len(s.meta) }

// vec returns the stored vector of point i (not a copy).
func (s *segment) vec(i int) []float32 {
	b := s.blocks[i/blockPoints].v
	o := (i % blockPoints) * s.dim
	return b[o : o+s.dim : o+s.dim]
}

// put inserts or replaces p. The caller holds mu for writing.
func (pt *partition) put(p Point) {
	pt.remove(p.ID)
	si, s := pt.segment(p.Scope, true)
	if s.len() == 0 && len(s.blocks) == 0 {
		s.dim = len(p.Vector)
	}
	i := s.len()
	nv := norm(p.Vector)
	var inv float32
	if nv > 0 {
		inv = float32(1 / nv)
	}
	s.storeVec(i, p.Vector, inv)
	s.norms = append(s.norms, nv)
	s.inv = append(s.inv, inv)

	m := pointMeta{id: p.ID, agent: pt.intern(p.AgentID), kind: pt.intern(p.Kind), category: pt.intern(p.Category),
		text: p.Text, createdAt: p.CreatedAt}
	if len(p.Payload) > 0 {
		m.payload = make(map[string]string, len(p.Payload))
		for k, v := range p.Payload {
			m.payload[k] = v
		}
	}
	terms := pt.terms[:0]
	for _, t := range Terms(p.Text) {
		id, ok := pt.termIDs[t]
		if !ok {
			id = int32(len(pt.df))
			pt.termIDs[t] = id
			pt.df = append(pt.df, 0)
		}
		m.length++
		if j := slices.IndexFunc(terms, func(x termFreq) bool { return x.term == id }); j >= 0 {
			terms[j].tf++
		} else {
			terms = append(terms, termFreq{term: id, tf: 1})
		}
	}
	pt.terms = terms
	for _, tf := range terms {
		for int(tf.term) >= len(s.postings) {
			s.postings = append(s.postings, nil)
		}
		s.postings[tf.term] = append(s.postings[tf.term], posting{i: int32(i), tf: tf.tf})
		pt.df[tf.term]++
	}
	s.meta = append(s.meta, m)
	s.lens = append(s.lens, m.length)
	pt.ids[p.ID] = ref{seg: si, i: int32(i)}
	pt.n++
	if m.length > 0 {
		pt.docs++
	}
	pt.totalLen += int(m.length)
	if !s.quant && pt.spillDir != "" && s.len() > pt.exactMax {
		s.quantise()
	}
	if s.quant && s.spill == nil && !s.noSpill && s.len() > pt.spillMin {
		if err := s.spillTo(pt.spillDir); err != nil {
			s.noSpill = true // the vectors stay in memory, as below the minimum
		}
	}
}

// trim reallocates the slices that grow by appending to their length. A restart appends
// every point, and what append leaves spare (up to a quarter of a large slice) would stay for
// the process's life, twice over in the heap the GC lets grow in proportion to it.
func (pt *partition) trim() {
	pt.df = slices.Clone(pt.df)
	pt.terms = nil
	for _, s := range pt.segs {
		s.meta, s.lens, s.norms = slices.Clone(s.meta), slices.Clone(s.lens), slices.Clone(s.norms)
		s.inv = slices.Clone(s.inv)
		if s.quant {
			s.scale = slices.Clone(s.scale)
		}
		for t, ps := range s.postings {
			if cap(ps) > len(ps) {
				s.postings[t] = slices.Clone(ps)
			}
		}
		s.postings = slices.Clone(s.postings)
	}
}

// termIDsOf appends the ids of text's distinct terms to dst. A point's terms are taken again
// from its text when it is removed or moved rather than kept with it: about 100 bytes of heap
// a point, held for the process's life, for operations far rarer than a search. put gave every
// term of a stored text its id.
func (pt *partition) termIDsOf(dst []int32, text string) []int32 {
	for _, t := range Terms(text) {
		if id, ok := pt.termIDs[t]; ok && !slices.Contains(dst, id) {
			dst = append(dst, id)
		}
	}
	return dst
}

// remove deletes id if present. The caller holds mu for writing.
func (pt *partition) remove(id string) {
	r, ok := pt.ids[id]
	if !ok {
		return
	}
	s := pt.segs[r.seg]
	i := int(r.i)
	m := &s.meta[i]
	terms := pt.termIDsOf(nil, m.text)
	for _, t := range terms {
		post := s.postings[t]
		j := slices.IndexFunc(post, func(p posting) bool { return int(p.i) == i })
		post[j] = post[len(post)-1]
		s.postings[t] = post[:len(post)-1]
		pt.df[t]--
	}
	pt.totalLen -= int(m.length)
	pt.n--
	if m.length > 0 {
		pt.docs--
	}
	delete(pt.ids, id)

	n := s.len()
	last := n - 1
	if i != last {
		s.norms[i], s.inv[i] = s.norms[last], s.inv[last]
		if err := s.moveVec(i, last); err != nil {
			s.err = err
		}
		s.meta[i] = s.meta[last]
		s.lens[i] = s.lens[last]
		for _, t := range pt.termIDsOf(terms[:0], s.meta[i].text) {
			post := s.postings[t]
			j := slices.IndexFunc(post, func(p posting) bool { return int(p.i) == last })
			post[j].i = int32(i)
		}
		pt.ids[s.meta[i].id] = ref{seg: r.seg, i: int32(i)}
	}
	s.meta[last] = pointMeta{}
	s.meta = s.meta[:last]
	s.lens = s.lens[:last]
	s.norms = s.norms[:last]
	s.inv = s.inv[:last]
	s.dropLast(n)
	if s.quant {
		s.scale = s.scale[:last]
		if s.spill != nil && (last < pt.spillMin/2 || last < pt.exactMax/2) {
			_ = s.unspill(last) // on a read error the vectors stay spilled
		}
		if s.spill == nil && last < pt.exactMax/2 {
			s.dequantise()
		}
	}
}

// release frees the partition's vector blocks. The partition must not be
// used afterwards; the caller makes sure no operation still holds it.
func (pt *partition) release() {
	for _, s := range pt.segs {
		s.release()
	}
	pt.segs, pt.ids, pt.n, pt.docs = nil, map[string]ref{}, 0, 0
}

// has reports whether id is in the partition.
func (pt *partition) has(id string) bool {
	_, ok := pt.ids[id]
	return ok
}

// point returns a copy of the stored point at r.
func (pt *partition) point(r ref) (Point, error) {
	s := pt.segs[r.seg]
	p := pt.pointMeta(r)
	// One allocation: a quantised segment reads the vector into buf; an exact one returns its
	// own, which the point must not share, so it is copied (a copy onto itself otherwise).
	buf := make([]float32, s.dim)
	v, err := s.loadVec(int(r.i), buf)
	if err != nil {
		return Point{}, err
	}
	copy(buf, v)
	p.Vector = buf
	if p.Payload != nil {
		p.Payload = maps.Clone(p.Payload)
	}
	return p, nil
}

// pointMeta returns the stored point at r without its vector; the payload is shared with the
// index.
func (pt *partition) pointMeta(r ref) Point {
	s := pt.segs[r.seg]
	m := &s.meta[r.i]
	return Point{ID: m.id, AccountID: pt.account, UserID: pt.user, AgentID: m.agent, Scope: s.scope, Kind: m.kind,
		Category: m.category, Text: m.text, Payload: m.payload, CreatedAt: m.createdAt}
}

// get returns a copy of the point id.
func (pt *partition) get(id string) (Point, bool, error) {
	r, ok := pt.ids[id]
	if !ok {
		return Point{}, false, nil
	}
	p, err := pt.point(r)
	return p, true, err
}

// snapshotBytes encodes the partition's snapshot, its points in id order. The caller holds mu.
func (pt *partition) snapshotBytes() ([]byte, error) {
	refs := pt.sortedRefs(Filter{}, "")
	var buf []float32
	var err error
	b := encodeSnapshot(pt.account, pt.user, len(refs), func(load bool, yield func(*Point) bool) {
		for _, r := range refs {
			p := pt.pointMeta(r)
			s := pt.segs[r.seg]
			if len(buf) < s.dim {
				buf = make([]float32, s.dim)
			}
			p.Vector = buf[:s.dim] // the right length to size the buffer
			if load {
				if p.Vector, err = s.loadVec(int(r.i), buf[:s.dim]); err != nil {
					return
				}
			}
			if !yield(&p) {
				return
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot vector partition: %w", err)
	}
	return b, nil
}

// sortedRefs returns the points matching f with an id after `after`, in id
// order.
func (pt *partition) sortedRefs(f Filter, after string) []ref {
	out := make([]ref, 0, len(pt.ids))
	for id, r := range pt.ids {
		if id > after && f.matchMeta(pt.segs[r.seg].scope, &pt.segs[r.seg].meta[r.i]) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b ref) int {
		return cmp.Compare(pt.segs[a.seg].meta[a.i].id, pt.segs[b.seg].meta[b.i].id)
	})
	return out
}

// matchMeta is Filter.match for a stored point.
func (f Filter) matchMeta(scope string, m *pointMeta) bool {
	if f.AgentID != "" && m.agent != f.AgentID {
		return false
	}
	return in(f.Scopes, scope) && in(f.Kinds, m.kind) && in(f.Categories, m.category)
}

// pointFilter reports whether f narrows beyond the scope (so each point's
// metadata must be checked).
func (f Filter) pointFilter() bool {
	return f.AgentID != "" || len(f.Kinds) > 0 || len(f.Categories) > 0
}

// dense returns the cosine of a stored vector (norm vn) with the query
// vector (norm qn), clamped to [0,1], computed in float64.
func dense(v []float32, vn float64, q []float32, qn float64) float64 {
	if qn == 0 || vn == 0 || len(q) != len(v) {
		return 0
	}
	var dot float64
	for i, x := range v {
		dot += float64(x) * float64(q[i])
	}
	return min(max(dot/(vn*qn), 0), 1)
}

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

// dot32 is the float32 dot product of a and b (len(b) >= len(a)), the
// inner loop of the dense scan.
func dot32(a, b []float32) float32 {
	var s0, s1, s2, s3 float32
	b = b[:len(a)]
	for len(a) >= 8 {
		x := a[:8:8]
		y := b[:8:8]
		s0 += x[0]*y[0] + x[4]*y[4]
		s1 += x[1]*y[1] + x[5]*y[5]
		s2 += x[2]*y[2] + x[6]*y[6]
		s3 += x[3]*y[3] + x[7]*y[7]
		a, b = a[8:], b[8:]
	}
	for i := range a {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// dots32Go is the portable dots32: dot32 of q with each vector.
func dots32Go(q, vecs []float32, dim int, out []float32) {
	q = q[:dim]
	for v := range out {
		out[v] = dot32(q, vecs[v*dim:v*dim+dim])
	}
}

// cand is a scored point of one search.
type cand struct {
	r     ref
	id    string
	score float64
}

// better orders candidates by score, then id.
func better(a, b *cand) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	return a.id < b.id
}

// topHeap keeps the k best candidates (a min-heap on better).
type topHeap struct {
	k int
	h []cand
}

// newTopHeap returns an empty topHeap of k, its slice allocated once: a search pushes
// thousands of candidates through it.
func newTopHeap(k int) topHeap { return topHeap{k: k, h: make([]cand, 0, k)} }

// worse reports whether i ranks below j.
func (t *topHeap) worse(i, j int) bool { return better(&t.h[j], &t.h[i]) }

// admits reports whether a candidate with this score could enter.
func (t *topHeap) admits(score float64) bool {
	return len(t.h) < t.k || score >= t.h[0].score
}

func (t *topHeap) push(c cand) {
	if len(t.h) < t.k {
		t.h = append(t.h, c)
		for j := len(t.h) - 1; j > 0; {
			p := (j - 1) / 2
			if !t.worse(j, p) {
				break
			}
			t.h[j], t.h[p] = t.h[p], t.h[j]
			j = p
		}
		return
	}
	if !better(&c, &t.h[0]) {
		return
	}
	t.h[0] = c
	for j := 0; ; {
		l, r, m := 2*j+1, 2*j+2, j
		if l < len(t.h) && t.worse(l, m) {
			m = l
		}
		if r < len(t.h) && t.worse(r, m) {
			m = r
		}
		if m == j {
			break
		}
		t.h[j], t.h[m] = t.h[m], t.h[j]
		j = m
	}
}

// sorted returns the kept candidates best first.
func (t *topHeap) sorted() []cand {
	out := slices.Clone(t.h)
	slices.SortFunc(out, bestFirst)
	return out
}

// bestFirst orders candidates by better, for slices.SortFunc.
func bestFirst(a, b cand) int {
	if better(&a, &b) {
		return -1
	}
	if better(&b, &a) {
		return 1
	}
	return 0
}

// scanRange scores points [from, to) of segment si into t: by float32 dot
// product, or by the codes' dot product for a quantised segment (qc, qscale:
// the query's codes). from is a multiple of blockPoints and to-from at most
// blockPoints. The caller holds mu for reading.
func (pt *partition) scanRange(f Filter, si int32, from, to int, q []float32, invQ float32, qc []int16, qscale float32, t *topHeap) {
	s := pt.segs[si]
	check := f.pointFilter()
	var dots [blockPoints]int32
	var fdots [blockPoints]float32
	o := (from % blockPoints) * s.dim
	if s.quant {
		dotsInt8(qc, s.codes[from/blockPoints].c[o:], s.dim, dots[:to-from])
	} else {
		dots32(q, s.blocks[from/blockPoints].v[o:], s.dim, fdots[:to-from])
	}
	for i := from; i < to; i++ {
		if check && !f.matchMeta(s.scope, &s.meta[i]) {
			continue
		}
		var x float32
		if s.quant {
			x = float32(dots[i-from]) * s.scale[i] * qscale
		} else {
			x = fdots[i-from] * s.inv[i] * invQ
		}
		score := float64(min(max(x, 0), 1))
		if !t.admits(score) {
			continue
		}
		t.push(cand{r: ref{seg: si, i: int32(i)}, id: s.meta[i].id, score: score})
	}
}

// denseTop returns the k points of segs closest to q by cosine, ties by id,
// with their exact (float64) cosine. A scan (split across CPUs when large)
// keeps k+denseMargin candidates by float32 cosine, quantRescore times as
// many when a segment is quantised (by its codes), and re-scores them
// exactly. The caller holds mu for reading.
func (pt *partition) denseTop(f Filter, segs []int32, q []float32, qn float64, k int) ([]cand, error) {
	keep := k + denseMargin
	invQ := float32(0)
	if qn > 0 {
		invQ = float32(1 / qn)
	}
	type job struct {
		seg      int32
		from, to int
	}
	var jobs []job
	var qc []int16
	var qscale float32
	total := 0
	for _, si := range segs {
		s := pt.segs[si]
		if s.err != nil {
			return nil, s.err
		}
		if s.quant && qc == nil {
			qc = make([]int16, s.dim)
			qscale = quantiseQuery(q, invQ, qc)
			keep *= quantRescore
		}
		n := s.len()
		for from := 0; from < n; from += blockPoints {
			jobs = append(jobs, job{si, from, min(from+blockPoints, n)})
		}
		if s.quant {
			total += n / quantCost
		} else {
			total += n
		}
	}
	workers := 1
	if total >= parallelMinPoints {
		workers = min(runtime.GOMAXPROCS(0), len(jobs))
	}
	heaps := make([]topHeap, workers)
	var wg sync.WaitGroup
	for w := range workers {
		heaps[w] = newTopHeap(keep)
		run := func() {
			for j := w; j < len(jobs); j += workers {
				pt.scanRange(f, jobs[j].seg, jobs[j].from, jobs[j].to, q, invQ, qc, qscale, &heaps[w])
			}
		}
		if w == workers-1 {
			run()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			run()
		}()
	}
	wg.Wait()
	// Re-scored best first by their scan score, the exact top k mostly enters first and few
	// candidates are admitted only to be pushed out. The order does not change the result: the
	// heap keeps the k best by (score, id) whatever it is given. Once it holds k, a candidate
	// of a quantised segment whose code score is below the k-th exact score by more than the
	// codes' error bound cannot enter (the k-th score only rises): its vector is not read.
	var all []cand
	for w := range heaps {
		all = append(all, heaps[w].h...)
	}
	slices.SortFunc(all, bestFirst)
	buf := make([]float32, len(q))
	t := newTopHeap(k)
	sqrtDim := math.Sqrt(float64(len(q)))
	for _, c := range all {
		s := pt.segs[c.r.seg]
		if s.quant && len(t.h) == k && c.score+quantErrBound(s.scale[c.r.i], qscale, sqrtDim) < t.h[0].score {
			continue
		}
		v, err := s.loadVec(int(c.r.i), buf)
		if err != nil {
			return nil, err
		}
		c.score = dense(v, s.norms[c.r.i], q, qn)
		if !t.admits(c.score) {
			continue
		}
		t.push(c)
	}
	return t.sorted(), nil
}

// kwScores are the BM25 scores of one search, held only for the points that hold a query
// term: the postings are walked, never the segment. Each segment with matches lends a scratch
// (its pool's): scores by position, all zero but where touched, and the positions touched.
// release returns them.
type kwScores struct {
	segs map[int32]*kwScratch
}

type kwScratch struct {
	seg     *segment
	score   []float64 // by segment position; zero where not touched
	touched []int32
}

// scratch returns a kwScratch of the segment's length from its pool (one pool per segment, so
// that a search of a small segment never takes, and drops, a large one's).
func (s *segment) scratch() *kwScratch {
	n := s.len()
	if k, ok := s.scores.Get().(*kwScratch); ok && cap(k.score) >= n {
		k.score = k.score[:n]
		return k
	}
	return &kwScratch{seg: s, score: make([]float64, n)}
}

// get returns the keyword score of the point at r (0 when it holds no query term).
func (k *kwScores) get(r ref) float64 {
	if ks := k.segs[r.seg]; ks != nil {
		return ks.score[r.i]
	}
	return 0
}

// release zeroes the touched scores and returns the scratches to their pools.
func (k *kwScores) release() {
	for _, ks := range k.segs {
		for _, i := range ks.touched {
			ks.score[i] = 0
		}
		ks.touched = ks.touched[:0]
		ks.seg.scores.Put(ks)
	}
	k.segs = nil
}

// keywordScores returns the BM25 scores of the points of segs matching f that hold at least
// one query term. Collection statistics (N, df, average length) are the partition's. The
// caller holds mu for reading and releases the result.
func (pt *partition) keywordScores(f Filter, segs []int32, query string) kwScores {
	terms := Terms(query)
	if len(terms) == 0 || pt.docs == 0 {
		return kwScores{}
	}
	n := float64(pt.docs)
	avgLen := float64(pt.totalLen) / n
	if avgLen == 0 {
		avgLen = 1
	}
	check := f.pointFilter()
	kw := kwScores{segs: map[int32]*kwScratch{}}
	seen := make(map[string]bool, len(terms))
	for _, t := range terms {
		if seen[t] {
			continue
		}
		seen[t] = true
		tid, ok := pt.termIDs[t]
		if !ok || pt.df[tid] == 0 {
			continue
		}
		df := float64(pt.df[tid])
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for _, si := range segs {
			s := pt.segs[si]
			if int(tid) >= len(s.postings) || len(s.postings[tid]) == 0 {
				continue
			}
			ks := kw.segs[si]
			if ks == nil {
				ks = s.scratch()
				kw.segs[si] = ks
			}
			sc := ks.score
			for _, p := range s.postings[tid] {
				if check && !f.matchMeta(s.scope, &s.meta[p.i]) {
					continue
				}
				if sc[p.i] == 0 {
					ks.touched = append(ks.touched, p.i)
				}
				x := float64(p.tf)
				sc[p.i] += idf * x * (bm25K1 + 1) / (x + bm25K1*(1-bm25B+bm25B*float64(s.lens[p.i])/avgLen))
			}
		}
	}
	return kw
}

// keywordTop returns the k best keyword scores, ties by id.
func (pt *partition) keywordTop(kw kwScores, k int) []cand {
	t := newTopHeap(k)
	for si, ks := range kw.segs {
		s := pt.segs[si]
		sc := ks.score
		for _, i := range ks.touched {
			if v := sc[i]; v > 0 && t.admits(v) {
				t.push(cand{r: ref{seg: si, i: i}, id: s.meta[i].id, score: v})
			}
		}
	}
	return t.sorted()
}

// search implements Store.Search on one partition. The caller holds mu for
// reading.
func (pt *partition) search(f Filter, q []float32, query string, k int) ([]Hit, error) {
	var segs []int32
	for i, s := range pt.segs {
		if in(f.Scopes, s.scope) && s.len() > 0 {
			segs = append(segs, int32(i))
		}
	}
	if len(segs) == 0 {
		return []Hit{}, nil
	}
	qn := norm(q)
	kw := pt.keywordScores(f, segs, query)
	defer kw.release()
	var pick []cand // the dense side's with their exact cosine, then the keyword side's others
	if len(q) > 0 {
		top, err := pt.denseTop(f, segs, q, qn, k)
		if err != nil {
			return nil, err
		}
		pick = top
	}
	nDense := len(pick)
	for _, c := range pt.keywordTop(kw, k) {
		if !slices.ContainsFunc(pick[:nDense], func(d cand) bool { return d.r == c.r }) {
			pick = append(pick, cand{r: c.r})
		}
	}
	// The hits carry no vector (Store.Search): the dense side's come with their exact score
	// from denseTop, and a keyword-side hit's vector is read into one buffer for its own.
	hits := make([]Hit, 0, len(pick))
	var buf []float32
	for j, c := range pick {
		p := pt.pointMeta(c.r)
		if p.Payload != nil {
			p.Payload = maps.Clone(p.Payload)
		}
		d := c.score
		if j >= nDense && len(q) > 0 {
			s := pt.segs[c.r.seg]
			if buf == nil {
				buf = make([]float32, s.dim)
			}
			v, err := s.loadVec(int(c.r.i), buf)
			if err != nil {
				return nil, err
			}
			d = dense(v, s.norms[c.r.i], q, qn)
		}
		hits = append(hits, Hit{ID: p.ID, Dense: d, Keyword: kw.get(c.r), Point: p})
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
	return hits, nil
}
