package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/store"
)

// `membus eval locomo --explain` (issue 18): where recall loses each gold evidence turn that
// is not in the top 10. The ranked call's trace lists every candidate recall scored, with its
// sources and what became of it; a gold turn falls in the first of these that applies:
const (
	lossFound       = "found@10"            // in the top 10
	lossRanked      = "ranked 11-20"        // in an item recall returned, below 10
	lossBeyond      = "candidate beyond 20" // a candidate, past the limit
	lossCollapsed   = "collapsed"           // a candidate folded into a better item that states its message
	lossDropped     = "dropped"             // a candidate under the score threshold or over the budget
	lossNoCandidate = "no candidate, memory exists"
	lossNoMemory    = "no candidate, no memory" // neither a memory sourced there nor its archive message among the candidates
)

// lossBuckets is the report's column order.
var lossBuckets = []string{lossFound, lossRanked, lossBeyond, lossCollapsed, lossDropped, lossNoCandidate, lossNoMemory}

// explainScore counts, per question category, the gold turns in each loss bucket.
type explainScore struct {
	// memorySourced[conv] holds the dia_ids some active memory of the conversation is
	// sourced at (digests aside).
	memorySourced []map[string]bool
	counts        map[string]map[string]int // category key → bucket → gold turns
}

func newExplainScore(memorySourced []map[string]bool) *explainScore {
	return &explainScore{memorySourced: memorySourced, counts: map[string]map[string]int{}}
}

// add classifies every gold turn of one answered question.
func (e *explainScore) add(conv int, q locomoQuestion, a evalAnswer) {
	top := map[string]bool{}
	for i := 0; i < len(a.ranked) && i < 10; i++ {
		for _, id := range a.ranked[i].sources {
			top[id] = true
		}
	}
	for _, g := range q.Evidence {
		e.count(strconv.Itoa(q.Category), e.bucket(conv, g, top, a.trace))
	}
}

func (e *explainScore) bucket(conv int, gold string, top map[string]bool, trace []contract.TraceEntry) string {
	if top[gold] {
		return lossFound
	}
	best := ""
	for _, t := range trace {
		if !slices.Contains(t.Sources, gold) {
			continue
		}
		b := lossDropped
		switch {
		case t.Kept:
			b = lossRanked
		case t.Dropped == "over the limit":
			b = lossBeyond
		case strings.HasPrefix(t.Dropped, "collapsed"):
			b = lossCollapsed
		}
		if best == "" || bucketIndex(b) < bucketIndex(best) {
			best = b
		}
	}
	switch {
	case best != "":
		return best
	case e.memorySourced[conv][gold]:
		return lossNoCandidate
	default:
		return lossNoMemory
	}
}

func bucketIndex(b string) int {
	for i, x := range lossBuckets {
		if x == b {
			return i
		}
	}
	return len(lossBuckets)
}

func (e *explainScore) count(cat, bucket string) {
	for _, key := range []string{cat, "1-4"} {
		if key == "1-4" && (cat < "1" || cat > "4") {
			continue
		}
		if e.counts[key] == nil {
			e.counts[key] = map[string]int{}
		}
		e.counts[key][bucket]++
	}
}

// explainReport is one line of the breakdown: a category's gold turns by bucket, as shares.
type explainReport struct {
	Eval     string             `json:"eval"`
	Category string             `json:"category"`
	Gold     int                `json:"gold_turns"`
	Shares   map[string]float64 `json:"shares"`
}

func (e *explainScore) reports() []explainReport {
	var out []explainReport
	for _, c := range evalCategories {
		n := 0
		for _, v := range e.counts[c.key] {
			n += v
		}
		if n == 0 {
			continue
		}
		r := explainReport{Eval: "locomo-explain", Category: c.key, Gold: n, Shares: map[string]float64{}}
		for _, b := range lossBuckets {
			r.Shares[b] = round4(float64(e.counts[c.key][b]) / float64(n))
		}
		out = append(out, r)
	}
	return out
}

// memorySources maps, per conversation, the dia_ids an active memory is sourced at.
func (m *membusEval) memorySources(ctx context.Context) ([]map[string]bool, error) {
	out := make([]map[string]bool, len(m.convs))
	for i, c := range m.convs {
		rows, err := m.env.Store.Memories(ctx, store.MemoryFilter{AccountID: m.account(i), UserID: m.user, ActiveOnly: true})
		if err != nil {
			return nil, fmt.Errorf("list the memories of %s: %w", c.ID, err)
		}
		out[i] = map[string]bool{}
		for _, r := range rows {
			if r.Category == "digest" {
				continue
			}
			for _, id := range r.SourceIDs() {
				out[i][id] = true
			}
		}
	}
	return out, nil
}

// writeExplainJSON writes one JSON line per category.
func writeExplainJSON(w io.Writer, reports []explainReport) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, r := range reports {
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("explain json: %w", err)
		}
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// writeExplainTable writes the breakdown as a table: a row per category, a column per bucket.
func writeExplainTable(w io.Writer, reports []explainReport) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "category\tgold turns\t")
	for _, b := range lossBuckets {
		fmt.Fprintf(tw, "%s\t", b)
	}
	fmt.Fprintln(tw)
	for _, r := range reports {
		label := r.Category
		for _, c := range evalCategories {
			if c.key == r.Category {
				label = c.label
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t", label, r.Gold)
		for _, b := range lossBuckets {
			fmt.Fprintf(tw, "%.3f\t", r.Shares[b])
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write explain table: %w", err)
	}
	return nil
}
