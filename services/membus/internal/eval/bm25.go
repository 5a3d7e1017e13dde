package eval

import (
	"math"
	"regexp"
	"sort"
	"strings"
)

// The BM25 anchor of the LoCoMo data README: BM25 over raw turns, one turn per item, one index
// per conversation. Its tokeniser and stop words are the README's, not pkg/vector's, so the
// baseline reproduces the published anchor exactly.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

var bm25Token = regexp.MustCompile(`[a-z0-9]+`)

// bm25StopWords are the README's stop words.
var bm25StopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an the and or of to in on at for with is are was were be
		been did do does what when where who whom which why how i you he she it we they his her their my
		your our its that this these those as by from about has have had`) {
		m[w] = true
	}
	return m
}()

// bm25Tokens lower-cases s and keeps the [a-z0-9]+ runs that are not stop words.
func bm25Tokens(s string) []string {
	var out []string
	for _, t := range bm25Token.FindAllString(strings.ToLower(s), -1) {
		if !bm25StopWords[t] {
			out = append(out, t)
		}
	}
	return out
}

// bm25Index scores the documents of one conversation.
type bm25Index struct {
	docs  []map[string]int // term frequencies per document
	lens  []int
	avgdl float64
	idf   map[string]float64
}

func newBM25Index(texts []string) *bm25Index {
	ix := &bm25Index{idf: map[string]float64{}}
	df := map[string]int{}
	total := 0
	for _, text := range texts {
		tf := map[string]int{}
		toks := bm25Tokens(text)
		for _, t := range toks {
			tf[t]++
		}
		for t := range tf {
			df[t]++
		}
		ix.docs = append(ix.docs, tf)
		ix.lens = append(ix.lens, len(toks))
		total += len(toks)
	}
	n := float64(len(texts))
	if len(texts) > 0 {
		ix.avgdl = float64(total) / n
	}
	for t, d := range df {
		ix.idf[t] = math.Log(1 + (n-float64(d)+0.5)/(float64(d)+0.5))
	}
	return ix
}

// rank returns every document index, best first; equal scores keep document (turn) order.
// Every query token counts, repeats included.
func (ix *bm25Index) rank(query string) []int {
	q := bm25Tokens(query)
	scores := make([]float64, len(ix.docs))
	for i, tf := range ix.docs {
		norm := bm25K1 * (1 - bm25B + bm25B*float64(ix.lens[i])/max(ix.avgdl, 1e-9))
		for _, t := range q {
			f := float64(tf[t])
			if f == 0 {
				continue
			}
			scores[i] += ix.idf[t] * f * (bm25K1 + 1) / (f + norm)
		}
	}
	order := make([]int, len(ix.docs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return scores[order[a]] > scores[order[b]] })
	return order
}
