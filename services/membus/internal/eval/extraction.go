package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/membus/membus/pkg/store"
)

// The extraction evaluation (`membus eval locomo --extraction`, issue 17): how well the
// memories extracted from a conversation state the facts a careful reader takes from it.
// LoCoMo ships them per session as `observation`s (a sentence and its evidence turns); they
// are the yardstick only, never an input of membus.

const (
	// extractionMatchF1 is the token F1 at which a memory states an observation.
	extractionMatchF1 = 0.5
	// extractionDuplicateF1 is the token F1 at which two active memories of one user say the
	// same thing (near-duplicates).
	extractionDuplicateF1 = 0.8
	// extractionRestateF1 and extractionRestateMinTokens: a memory restates a whole source
	// turn when its token F1 with the turn is at least this and the turn has at least that
	// many content tokens (a short turn that is one fact may well read as its memory).
	extractionRestateF1        = 0.8
	extractionRestateMinTokens = 12
)

// locomoObservation is one observation of the data set: its sentence and evidence turns.
type locomoObservation struct {
	Text     string
	Evidence []string // normalised dia_ids that exist in the conversation
}

// parseObservations reads a sample's `observation` object: session_N_observation → speaker →
// [[sentence, dia_id or [dia_id…]] …]. Observations without valid evidence are dropped.
func (c locomoConv) parseObservations(raw map[string]map[string][][]json.RawMessage) ([]locomoObservation, error) {
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []locomoObservation
	for _, k := range keys {
		speakers := make([]string, 0, len(raw[k]))
		for s := range raw[k] {
			speakers = append(speakers, s)
		}
		sort.Strings(speakers)
		for _, s := range speakers {
			for _, item := range raw[k][s] {
				if len(item) != 2 {
					return nil, fmt.Errorf("%w: %s %s %s: an observation is [sentence, evidence], got %d values", errLocomoData, c.ID, k, s, len(item))
				}
				var text string
				if err := json.Unmarshal(item[0], &text); err != nil {
					return nil, fmt.Errorf("%w: %s %s %s: sentence: %w", errLocomoData, c.ID, k, s, err)
				}
				var ev []string
				var one string
				if err := json.Unmarshal(item[1], &one); err == nil {
					ev = []string{one}
				} else if err := json.Unmarshal(item[1], &ev); err != nil {
					return nil, fmt.Errorf("%w: %s %s %s: evidence is neither a dia_id nor a list of them: %w", errLocomoData, c.ID, k, s, err)
				}
				if ev = c.normaliseEvidence(ev); len(ev) > 0 && strings.TrimSpace(text) != "" {
					out = append(out, locomoObservation{Text: text, Evidence: ev})
				}
			}
		}
	}
	return out, nil
}

// extractionReport is one line of the extraction eval: a conversation, or "all".
type extractionReport struct {
	Eval                   string  `json:"eval"`
	System                 string  `json:"system"`
	Extractor              string  `json:"extractor"`
	Embedder               string  `json:"embedder"`
	Conversation           string  `json:"conversation"`
	Observations           int     `json:"observations"`
	Memories               int     `json:"memories"`
	SourcedShare           float64 `json:"sourced_share"`
	MatchedShare           float64 `json:"matched_share"`
	MeanBestF1             float64 `json:"mean_best_f1"`
	MemoriesPerObservation float64 `json:"memories_per_observation"`
	NearDuplicateShare     float64 `json:"near_duplicate_share"`
	RestateShare           float64 `json:"restate_share"`
}

// extractionCounts are the sums a report is made of, so "all" pools the conversations
// rather than averaging their shares.
type extractionCounts struct {
	observations, sourced, matched int
	bestF1                         float64
	memories, nearDup, restate     int
}

func (a *extractionCounts) merge(b extractionCounts) {
	a.observations += b.observations
	a.sourced += b.sourced
	a.matched += b.matched
	a.bestF1 += b.bestF1
	a.memories += b.memories
	a.nearDup += b.nearDup
	a.restate += b.restate
}

func (a extractionCounts) report(conv string) extractionReport {
	share := func(n, d int) float64 {
		if d == 0 {
			return 0
		}
		return round4(float64(n) / float64(d))
	}
	r := extractionReport{Eval: "locomo-extraction", Conversation: conv, Observations: a.observations, Memories: a.memories,
		SourcedShare: share(a.sourced, a.observations), MatchedShare: share(a.matched, a.observations),
		MemoriesPerObservation: share(a.memories, a.observations), NearDuplicateShare: share(a.nearDup, a.memories),
		RestateShare: share(a.restate, a.memories)}
	if a.observations > 0 {
		r.MeanBestF1 = round4(a.bestF1 / float64(a.observations))
	}
	return r
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

// extractedMemory is an active memory as the extraction eval sees it.
type extractedMemory struct {
	text    string
	tokens  []string
	sources []string // dia_ids
}

// extractionTraceLine is one observation's line of `--extraction --trace-out`: the
// observation, its evidence turns, and the best memory sourced at one of them (empty when
// none is) with its token F1, so the misses can be read and sorted offline.
type extractionTraceLine struct {
	Conv        string   `json:"conv"`
	Observation string   `json:"observation"`
	Evidence    []string `json:"evidence"`
	Turns       []string `json:"turns"` // "speaker: text" of each evidence turn
	Sourced     int      `json:"sourced"`
	Best        string   `json:"best,omitempty"`
	BestF1      float64  `json:"best_f1"`
	Matched     bool     `json:"matched"`
	Others      []string `json:"others,omitempty"` // the other memories sourced there
}

// scoreExtraction measures one conversation's memories against its observations.
// trace, when not nil, receives one line per observation.
func scoreExtraction(c locomoConv, mems []extractedMemory, trace func(extractionTraceLine)) extractionCounts {
	cnt := extractionCounts{observations: len(c.Observations), memories: len(mems)}
	byTurn := map[string][]int{} // dia_id → memories sourced there
	for i, m := range mems {
		for _, s := range m.sources {
			byTurn[s] = append(byTurn[s], i)
		}
	}
	for _, o := range c.Observations {
		ot := bm25Tokens(o.Text)
		best, sourced, bestAt := 0.0, false, -1
		var at []int
		for _, id := range o.Evidence {
			for _, i := range byTurn[id] {
				sourced = true
				at = append(at, i)
				if f := tokenF1(ot, mems[i].tokens); f > best || bestAt < 0 {
					best, bestAt = max(best, f), i
				}
			}
		}
		if trace != nil {
			trace(c.traceLine(o, mems, at, bestAt, best))
		}
		if sourced {
			cnt.sourced++
		}
		if best >= extractionMatchF1 {
			cnt.matched++
		}
		cnt.bestF1 += best
	}
	dup := make([]bool, len(mems))
	for i := range mems {
		for j := i + 1; j < len(mems); j++ {
			if tokenF1(mems[i].tokens, mems[j].tokens) >= extractionDuplicateF1 {
				dup[i], dup[j] = true, true
			}
		}
		if dup[i] {
			cnt.nearDup++
		}
	}
	for _, m := range mems {
		for _, s := range m.sources {
			ti, ok := c.turnIndex[s]
			if !ok {
				continue
			}
			tt := bm25Tokens(c.turns[ti].content())
			if len(tt) >= extractionRestateMinTokens && tokenF1(m.tokens, tt) >= extractionRestateF1 {
				cnt.restate++
				break
			}
		}
	}
	return cnt
}

// traceLine builds an observation's trace line from the memories sourced at its evidence.
func (c locomoConv) traceLine(o locomoObservation, mems []extractedMemory, at []int, bestAt int, best float64) extractionTraceLine {
	l := extractionTraceLine{Conv: c.ID, Observation: o.Text, Evidence: o.Evidence, Sourced: len(at), BestF1: round4(best),
		Matched: best >= extractionMatchF1}
	for _, id := range o.Evidence {
		if ti, ok := c.turnIndex[id]; ok {
			l.Turns = append(l.Turns, c.turns[ti].Speaker+": "+c.turns[ti].content())
		}
	}
	for _, i := range at {
		if i == bestAt {
			l.Best = mems[i].text
		} else {
			l.Others = append(l.Others, mems[i].text)
		}
	}
	return l
}

// tokenF1 is the bag-of-tokens F1 of two token lists (SQuAD's answer F1).
func tokenF1(a, b []string) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	bag := make(map[string]int, len(b))
	for _, t := range b {
		bag[t]++
	}
	common := 0
	for _, t := range a {
		if bag[t] > 0 {
			bag[t]--
			common++
		}
	}
	if common == 0 {
		return 0
	}
	p, r := float64(common)/float64(len(a)), float64(common)/float64(len(b))
	return 2 * p * r / (p + r)
}

// extraction lists every conversation's active memories (digests aside: they summarise, they
// are not extracted facts) and scores them; the last report pools every conversation.
// trace, when not nil, receives a line per observation (--trace-out).
func (m *membusEval) extraction(ctx context.Context, extractor string, trace io.Writer) ([]extractionReport, error) {
	var all extractionCounts
	var traceErr error
	emit := func(l extractionTraceLine) {
		b, err := json.Marshal(l)
		if err == nil {
			_, err = trace.Write(append(b, '\n'))
		}
		if err != nil && traceErr == nil {
			traceErr = fmt.Errorf("extraction trace: %w", err)
		}
	}
	if trace == nil {
		emit = nil
	}
	var out []extractionReport
	for i, c := range m.convs {
		rows, err := m.env.Store.Memories(ctx, store.MemoryFilter{AccountID: m.account(i), UserID: m.user, ActiveOnly: true})
		if err != nil {
			return nil, fmt.Errorf("list the memories of %s: %w", c.ID, err)
		}
		mems := make([]extractedMemory, 0, len(rows))
		for _, r := range rows {
			if r.Category == "digest" {
				continue
			}
			mems = append(mems, extractedMemory{text: r.Text, tokens: bm25Tokens(r.Text), sources: r.SourceIDs()})
		}
		cnt := scoreExtraction(c, mems, emit)
		if traceErr != nil {
			return nil, traceErr
		}
		all.merge(cnt)
		out = append(out, cnt.report(c.ID))
	}
	out = append(out, all.report("all"))
	for i := range out {
		out[i].System, out[i].Extractor, out[i].Embedder = "membus", extractor, m.env.Embedder.Model()
	}
	return out, nil
}

// writeExtractionJSON writes one JSON line per report.
func writeExtractionJSON(w io.Writer, reports []extractionReport) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, r := range reports {
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("extraction json: %w", err)
		}
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// writeExtractionTable writes the human table, one row per conversation and the pooled row.
func writeExtractionTable(w io.Writer, reports []extractionReport) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "conversation\textractor\tobservations\tmemories\tsourced\tmatched (F1≥0.5)\tmean best F1\tmemories/obs\tnear-dup\trestate\t")
	for _, r := range reports {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.3f\t%.3f\t%.3f\t%.2f\t%.3f\t%.3f\t\n", r.Conversation, r.Extractor, r.Observations, r.Memories,
			r.SourcedShare, r.MatchedShare, r.MeanBestF1, r.MemoriesPerObservation, r.NearDuplicateShare, r.RestateShare)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write extraction table: %w", err)
	}
	return nil
}
