package eval

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"text/tabwriter"
)

// The bounds of extraction by selection (`membus eval locomo --extraction-bounds`): for each
// observation, the best a memory made only of its evidence turn's own words could score, the
// speaker's name put first, with the eval's tokenizer, stop words and F1. They say which share
// of the observations no choice of the turn's words can match (they paraphrase, interpret or
// summarise) and which shape a memory must take to match the rest: a whole sentence, a run of
// clauses, any contiguous span. They read the data set alone; membus does not run.

// boundClauseRuns is the longest run of clauses measured (1, 2, … clauses).
const boundClauseRuns = 3

// extractionBounds are the matched shares (token F1 ≥ extractionMatchF1) of the best memory
// of each shape over every observation of one conversation, or "all".
type extractionBounds struct {
	Eval         string    `json:"eval"`
	Conversation string    `json:"conversation"`
	Observations int       `json:"observations"`
	Sentence     float64   `json:"sentence"`
	ClauseRuns   []float64 `json:"clause_runs"` // i: runs of at most i+1 clauses
	Span         float64   `json:"span"`
	Subset       float64   `json:"subset"`
}

// boundCounts are the matched counts a report is made of, so "all" pools the conversations.
type boundCounts struct {
	observations, sentence, span, subset int
	clauses                              [boundClauseRuns]int
}

func (a *boundCounts) merge(b boundCounts) {
	a.observations += b.observations
	a.sentence += b.sentence
	a.span += b.span
	a.subset += b.subset
	for i := range a.clauses {
		a.clauses[i] += b.clauses[i]
	}
}

func (a boundCounts) report(conv string) extractionBounds {
	share := func(n int) float64 {
		if a.observations == 0 {
			return 0
		}
		return round4(float64(n) / float64(a.observations))
	}
	r := extractionBounds{Eval: "locomo-extraction-bounds", Conversation: conv, Observations: a.observations,
		Sentence: share(a.sentence), Span: share(a.span), Subset: share(a.subset)}
	for _, n := range a.clauses {
		r.ClauseRuns = append(r.ClauseRuns, share(n))
	}
	return r
}

// boundsOf measures every conversation, then pools them ("all" last).
func boundsOf(convs []locomoConv) []extractionBounds {
	var all boundCounts
	out := make([]extractionBounds, 0, len(convs)+1)
	for _, c := range convs {
		cnt := c.bounds()
		all.merge(cnt)
		out = append(out, cnt.report(c.ID))
	}
	return append(out, all.report("all"))
}

// bounds counts, per shape, the observations whose best memory of that shape matches.
func (c locomoConv) bounds() boundCounts {
	cnt := boundCounts{observations: len(c.Observations)}
	for _, o := range c.Observations {
		ot := bm25Tokens(o.Text)
		var best struct {
			sentence, span, subset float64
			clauses                [boundClauseRuns]float64
		}
		for _, id := range o.Evidence {
			ti, ok := c.turnIndex[id]
			if !ok {
				continue
			}
			t := c.turns[ti]
			name := bm25Tokens(t.Speaker)
			named := func(s string) []string { return append(append([]string(nil), name...), bm25Tokens(s)...) }
			for _, s := range sentences(t.content()) {
				best.sentence = max(best.sentence, tokenF1(ot, named(s)))
				parts := clauses(s)
				for i := range parts {
					for n := 1; n <= boundClauseRuns && i+n <= len(parts); n++ {
						f := tokenF1(ot, named(strings.Join(parts[i:i+n], " ")))
						for k := n - 1; k < boundClauseRuns; k++ {
							best.clauses[k] = max(best.clauses[k], f)
						}
					}
				}
			}
			best.span = max(best.span, bestSpanF1(ot, name, bm25Tokens(t.content())))
			best.subset = max(best.subset, subsetF1(ot, named(t.content())))
		}
		matched := func(f float64) int {
			if f >= extractionMatchF1 {
				return 1
			}
			return 0
		}
		cnt.sentence += matched(best.sentence)
		cnt.span += matched(best.span)
		cnt.subset += matched(best.subset)
		for k, f := range best.clauses {
			cnt.clauses[k] += matched(f)
		}
	}
	return cnt
}

var (
	sentenceEnd = regexp.MustCompile(`[.!?]\s+`)
	// clauseBreak cuts a sentence at punctuation and at the conjunctions and subordinators
	// that open a clause.
	clauseBreak = regexp.MustCompile(`(?i)[,;:]|\s-\s|\b(?:and|but|so|because|since|which|while|though|although|when|if|as)\b`)
)

// sentences splits a turn after each ".", "!" or "?" that a space follows.
func sentences(s string) []string {
	var out []string
	from := 0
	for _, loc := range sentenceEnd.FindAllStringIndex(s, -1) {
		out = append(out, s[from:loc[0]+1])
		from = loc[1]
	}
	if strings.TrimSpace(s[from:]) != "" {
		out = append(out, s[from:])
	}
	return out
}

// clauses cuts a sentence at clauseBreak, dropping the breaks and empty parts.
func clauses(s string) []string {
	var out []string
	for _, p := range clauseBreak.Split(s, -1) {
		if strings.TrimSpace(p) != "" {
			out = append(out, p)
		}
	}
	return out
}

// bestSpanF1 is the best token F1 between obs and prefix followed by a contiguous span of
// toks (prefix alone included).
func bestSpanF1(obs, prefix, toks []string) float64 {
	if len(obs) == 0 {
		return 0
	}
	need := map[string]int{}
	for _, t := range obs {
		need[t]++
	}
	base := 0 // obs tokens the prefix covers
	used := map[string]int{}
	for _, t := range prefix {
		if used[t] < need[t] {
			base++
		}
		used[t]++
	}
	f1 := func(common, n int) float64 {
		if common == 0 || n == 0 {
			return 0
		}
		p, r := float64(common)/float64(n), float64(common)/float64(len(obs))
		return 2 * p * r / (p + r)
	}
	best := f1(base, len(prefix))
	for i := range toks {
		span := map[string]int{}
		for t, n := range used {
			span[t] = n
		}
		common := base
		for j := i; j < len(toks); j++ {
			t := toks[j]
			if span[t] < need[t] {
				common++
			}
			span[t]++
			best = max(best, f1(common, len(prefix)+j-i+1))
		}
	}
	return best
}

// subsetF1 is the best token F1 any subset of toks reaches against obs: all of their common
// tokens and nothing else (precision 1).
func subsetF1(obs, toks []string) float64 {
	have := map[string]int{}
	for _, t := range toks {
		have[t]++
	}
	common := 0
	for _, t := range obs {
		if have[t] > 0 {
			have[t]--
			common++
		}
	}
	if common == 0 {
		return 0
	}
	return 2 * float64(common) / float64(len(obs)+common)
}

func writeBoundsJSON(w io.Writer, reports []extractionBounds) error {
	enc := json.NewEncoder(w)
	for _, r := range reports {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

func writeBoundsTable(w io.Writer, reports []extractionBounds) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := "conversation\tobservations\tsentence"
	for n := 1; n <= boundClauseRuns; n++ {
		header += fmt.Sprintf("\t≤%d clauses", n)
	}
	fmt.Fprintln(tw, header+"\tspan\ttoken subset")
	for _, r := range reports {
		line := fmt.Sprintf("%s\t%d\t%.3f", r.Conversation, r.Observations, r.Sentence)
		for _, s := range r.ClauseRuns {
			line += fmt.Sprintf("\t%.3f", s)
		}
		fmt.Fprintln(tw, line+fmt.Sprintf("\t%.3f\t%.3f", r.Span, r.Subset))
	}
	return tw.Flush()
}
