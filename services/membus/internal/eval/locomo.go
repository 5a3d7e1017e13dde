// Package eval holds `membus eval`: recall quality measured on a benchmark data set (LoCoMo)
// through a membus started in-process by the shared harness, beside a BM25 anchor over raw turns.
package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/membus/membus/pkg/bench"
	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/config"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/embed/onnx"
	"github.com/membus/membus/services/membus/internal/app"
	"github.com/membus/membus/services/membus/internal/cli"
	"github.com/membus/membus/services/membus/internal/harness"
)

// The LoCoMo evaluation (data README, "Evaluation protocol"): evidence recall of what recall
// returns, per question category, membus and optionally the BM25 anchor through one harness.

const (
	locomoDateLayout = "3:04 pm on 2 January, 2006" // %I:%M %p on %d %B, %Y
	evalRankedLimit  = 20                           // the protocol's recall limit
	// evalRankedBudget lifts the injection budget of the ranked call (limit 20 items of at
	// most 1000 chars each), so recall@k measures the ranking; the budget is measured apart,
	// by a second call with every default.
	evalRankedBudget = evalRankedLimit * 1000
	// Defaults of docs/design.md §6 the BM25 baseline's budget row applies the same way.
	evalDefaultLimit  = 6
	evalDefaultBudget = 4000
	evalWorkers       = 4 // recall calls in flight
)

var locomoEvidence = regexp.MustCompile(`D:?(\d+):(\d+)`)

// errLocomoData: the data file is not LoCoMo's format.
var errLocomoData = errors.New("locomo data")

type locomoTurn struct {
	Speaker     string `json:"speaker"`
	DiaID       string `json:"dia_id"`
	Text        string `json:"text"`
	BlipCaption string `json:"blip_caption"`
}

// content is what the system ingests for a turn: the text, and the image caption for image
// turns (some answers exist only in captions).
func (t locomoTurn) content() string {
	if t.BlipCaption != "" {
		return t.Text + " [shares " + t.BlipCaption + "]"
	}
	return t.Text
}

type locomoSession struct {
	N     int
	Date  time.Time
	Turns []locomoTurn
}

type locomoQuestion struct {
	Question string
	Category int
	Evidence []string // normalised dia_ids that exist in the conversation
}

type locomoConv struct {
	ID        string
	Sessions  []locomoSession // in session order
	Questions []locomoQuestion
	// Observations are the data set's per-session facts: the extraction eval's yardstick.
	Observations []locomoObservation
	turns        []locomoTurn // every turn in dialogue order
	turnIndex    map[string]int
}

// lastDate is the date of the conversation's last session: recall's `now`.
func (c locomoConv) lastDate() time.Time { return c.Sessions[len(c.Sessions)-1].Date }

// loadLocomo reads a LoCoMo JSON file (a list of samples).
func loadLocomo(path string) ([]locomoConv, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var raw []struct {
		SampleID     string                     `json:"sample_id"`
		Conversation map[string]json.RawMessage `json:"conversation"`
		QA           []struct {
			Question string   `json:"question"`
			Evidence []string `json:"evidence"`
			Category int      `json:"category"`
		} `json:"qa"`
		Observation map[string]map[string][][]json.RawMessage `json:"observation"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errLocomoData, path, err)
	}
	convs := make([]locomoConv, 0, len(raw))
	for _, r := range raw {
		c := locomoConv{ID: r.SampleID, turnIndex: map[string]int{}}
		// The session_N keys, not the date keys: some date keys have no session.
		for key, v := range r.Conversation {
			rest, ok := strings.CutPrefix(key, "session_")
			if !ok || strings.Contains(rest, "_") {
				continue
			}
			n, err := strconv.Atoi(rest)
			if err != nil {
				continue
			}
			var s locomoSession
			s.N = n
			if err := json.Unmarshal(v, &s.Turns); err != nil {
				return nil, fmt.Errorf("%w: %s %s: %w", errLocomoData, r.SampleID, key, err)
			}
			var date string
			if err := json.Unmarshal(r.Conversation[key+"_date_time"], &date); err != nil {
				return nil, fmt.Errorf("%w: %s %s_date_time: %w", errLocomoData, r.SampleID, key, err)
			}
			if s.Date, err = time.Parse(locomoDateLayout, strings.ToLower(strings.TrimSpace(date))); err != nil {
				return nil, fmt.Errorf("%w: %s %s_date_time: %w", errLocomoData, r.SampleID, key, err)
			}
			if len(s.Turns) > 0 {
				c.Sessions = append(c.Sessions, s)
			}
		}
		if len(c.Sessions) == 0 {
			return nil, fmt.Errorf("%w: %s has no sessions", errLocomoData, r.SampleID)
		}
		sort.Slice(c.Sessions, func(i, j int) bool { return c.Sessions[i].N < c.Sessions[j].N })
		for _, s := range c.Sessions {
			for _, t := range s.Turns {
				if _, dup := c.turnIndex[t.DiaID]; dup {
					return nil, fmt.Errorf("%w: %s: dia_id %s twice", errLocomoData, r.SampleID, t.DiaID)
				}
				c.turnIndex[t.DiaID] = len(c.turns)
				c.turns = append(c.turns, t)
			}
		}
		for _, q := range r.QA {
			c.Questions = append(c.Questions, locomoQuestion{Question: q.Question, Category: q.Category, Evidence: c.normaliseEvidence(q.Evidence)})
		}
		var err error
		if c.Observations, err = c.parseObservations(r.Observation); err != nil {
			return nil, err
		}
		convs = append(convs, c)
	}
	return convs, nil
}

// normaliseEvidence applies the README's regex to every evidence string (one may hold several
// ids, e.g. "D8:6; D9:17") and drops ids that do not exist and repeats.
func (c locomoConv) normaliseEvidence(ev []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, e := range ev {
		for _, m := range locomoEvidence.FindAllStringSubmatch(e, -1) {
			s, _ := strconv.Atoi(m[1])
			t, _ := strconv.Atoi(m[2])
			id := fmt.Sprintf("D%d:%d", s, t)
			if _, ok := c.turnIndex[id]; ok && !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	return out
}

// evalItem is one retrieved item and the dia_ids it is credited with.
type evalItem struct {
	sources []string
}

// evalAnswer is a system's answer to one question.
type evalAnswer struct {
	ranked   []evalItem // up to evalRankedLimit items, best first
	budget   []evalItem // what fits the default injection budget
	injected int        // chars injected with the default budget
	// trace is the ranked call's trace (--explain): every candidate and what became of it.
	trace []contract.TraceEntry
}

// answerFunc answers question q of conversation conv.
type answerFunc func(ctx context.Context, conv int, q locomoQuestion) (evalAnswer, error)

// evalCategories are the report's rows: the headline (1–4), each category, 5 apart.
var evalCategories = []struct{ key, label string }{
	{"1-4", "1-4"}, {"1", "1 multi-hop"}, {"2", "2 temporal"}, {"3", "3 open-domain"}, {"4", "4 single-hop"}, {"5", "5 adversarial"},
}

// evalCategory is one category of a report (docs/design.md §10 field names and order).
type evalCategory struct {
	N                int     `json:"n"`
	R1               float64 `json:"recall@1"`
	R5               float64 `json:"recall@5"`
	R10              float64 `json:"recall@10"`
	R20              float64 `json:"recall@20"`
	All10            float64 `json:"all@10"`
	BudgetRecall     float64 `json:"budget_recall"`
	AvgInjectedChars float64 `json:"avg_injected_chars"`
	Turns10          float64 `json:"turns@10"`
}

// evalReport is one system's result: one docs/design.md §10 JSON line.
type evalReport struct {
	System     string
	Config     string
	Embedder   string
	Categories map[string]*evalCategory
}

// MarshalJSON writes the docs/design.md §10 line with the categories in report order.
func (r evalReport) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	head, err := json.Marshal(struct {
		Eval     string `json:"eval"`
		System   string `json:"system"`
		Config   string `json:"config"`
		Embedder string `json:"embedder"`
	}{"locomo", r.System, r.Config, r.Embedder})
	if err != nil {
		return nil, err
	}
	buf.Write(head[:len(head)-1])
	buf.WriteString(`,"categories":{`)
	first := true
	for _, c := range evalCategories {
		cat, ok := r.Categories[c.key]
		if !ok {
			continue
		}
		b, err := json.Marshal(cat)
		if err != nil {
			return nil, err
		}
		if !first {
			buf.WriteByte(',')
		}
		first = false
		fmt.Fprintf(&buf, "%q:%s", c.key, b)
	}
	buf.WriteString("}}")
	return buf.Bytes(), nil
}

// evalScore accumulates the per-question measures of one category.
type evalScore struct {
	n                                          int
	r1, r5, r10, r20, all10, budget, chars, tu float64
}

func (s *evalScore) add(gold []string, a evalAnswer, valid map[string]int) {
	found := func(items []evalItem, k int) map[string]bool {
		got := map[string]bool{}
		for i := 0; i < len(items) && i < k; i++ {
			for _, id := range items[i].sources {
				if _, ok := valid[id]; ok {
					got[id] = true
				}
			}
		}
		return got
	}
	recall := func(got map[string]bool) float64 {
		hit := 0
		for _, g := range gold {
			if got[g] {
				hit++
			}
		}
		return float64(hit) / float64(len(gold))
	}
	s.n++
	s.r1 += recall(found(a.ranked, 1))
	s.r5 += recall(found(a.ranked, 5))
	top10 := found(a.ranked, 10)
	r10 := recall(top10)
	s.r10 += r10
	if r10 == 1 {
		s.all10++
	}
	s.r20 += recall(found(a.ranked, 20))
	s.budget += recall(found(a.budget, len(a.budget)))
	s.chars += float64(a.injected)
	s.tu += float64(len(top10))
}

func (s *evalScore) merge(o *evalScore) {
	s.n += o.n
	s.r1, s.r5, s.r10, s.r20 = s.r1+o.r1, s.r5+o.r5, s.r10+o.r10, s.r20+o.r20
	s.all10, s.budget, s.chars, s.tu = s.all10+o.all10, s.budget+o.budget, s.chars+o.chars, s.tu+o.tu
}

func (s *evalScore) category() *evalCategory {
	if s.n == 0 {
		return &evalCategory{}
	}
	n := float64(s.n)
	r := func(x float64, places int) float64 {
		p := 1.0
		for range places {
			p *= 10
		}
		return float64(int64(x/n*p+0.5)) / p
	}
	return &evalCategory{N: s.n, R1: r(s.r1, 4), R5: r(s.r5, 4), R10: r(s.r10, 4), R20: r(s.r20, 4), All10: r(s.all10, 4),
		BudgetRecall: r(s.budget, 4), AvgInjectedChars: r(s.chars, 1), Turns10: r(s.tu, 2)}
}

// runEval asks every question with evidence through answer (workers at a time) and scores the
// answers in question order, so the report does not depend on scheduling.
// With explain non-nil, it also classifies where each answer lost its gold turns.
func runEval(ctx context.Context, convs []locomoConv, system, embedder string, workers int, prog io.Writer, answer answerFunc, explain *explainScore) (evalReport, error) {
	type job struct {
		conv int
		q    locomoQuestion
	}
	var jobs []job
	for ci, c := range convs {
		for _, q := range c.Questions {
			if len(q.Evidence) > 0 {
				jobs = append(jobs, job{ci, q})
			}
		}
	}
	answers := make([]evalAnswer, len(jobs))
	bar := bench.NewProgress(prog, "recall "+system, len(jobs))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		next     = make(chan int)
	)
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				a, err := answer(ctx, jobs[i].conv, jobs[i].q)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("%s question %q: %w", convs[jobs[i].conv].ID, jobs[i].q.Question, err)
					}
					mu.Unlock()
					cancel()
					continue
				}
				answers[i] = a
				bar.Add(1)
			}
		}()
	}
feed:
	for i := range jobs {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	bar.Done()
	if firstErr != nil {
		return evalReport{}, firstErr
	}
	if err := ctx.Err(); err != nil {
		return evalReport{}, err
	}
	scores := map[string]*evalScore{}
	for _, c := range evalCategories {
		scores[c.key] = &evalScore{}
	}
	for i, j := range jobs {
		key := strconv.Itoa(j.q.Category)
		s, ok := scores[key]
		if !ok {
			s = &evalScore{}
			scores[key] = s
		}
		s.add(j.q.Evidence, answers[i], convs[j.conv].turnIndex)
		if explain != nil {
			explain.add(j.conv, j.q, answers[i])
		}
	}
	for _, k := range []string{"1", "2", "3", "4"} {
		scores["1-4"].merge(scores[k])
	}
	rep := evalReport{System: system, Config: "default", Embedder: embedder, Categories: map[string]*evalCategory{}}
	for k, s := range scores {
		rep.Categories[k] = s.category()
	}
	return rep, nil
}

// bm25Answers is the BM25 anchor as a system: one index per conversation over raw turns
// ("Speaker: text [shares caption]"); the budget row applies recall's defaults (at most 6
// items, 4000 chars of item text) to the same ranking.
func bm25Answers(convs []locomoConv) answerFunc {
	indexes := make([]*bm25Index, len(convs))
	docs := make([][]string, len(convs))
	for i, c := range convs {
		for _, t := range c.turns {
			docs[i] = append(docs[i], t.Speaker+": "+t.content())
		}
		indexes[i] = newBM25Index(docs[i])
	}
	return func(_ context.Context, conv int, q locomoQuestion) (evalAnswer, error) {
		order := indexes[conv].rank(q.Question)
		var a evalAnswer
		for _, d := range order[:min(len(order), evalRankedLimit)] {
			a.ranked = append(a.ranked, evalItem{sources: []string{convs[conv].turns[d].DiaID}})
		}
		used := 0
		var lines []string
		for _, d := range order {
			if len(a.budget) >= evalDefaultLimit {
				break
			}
			text := docs[conv][d]
			if used+len(text) > evalDefaultBudget {
				continue
			}
			used += len(text)
			a.budget = append(a.budget, evalItem{sources: []string{convs[conv].turns[d].DiaID}})
			lines = append(lines, "- "+text)
		}
		if len(lines) > 0 {
			a.injected = len("<relevant-memories>\n" + strings.Join(lines, "\n") + "\n</relevant-memories>")
		}
		return a, nil
	}
}

// membusEval is a membus started in-process for the evaluation: one account, user and agent
// per conversation.
type membusEval struct {
	env    *app.Env
	suffix string // "-<run id>" on a real backend, so runs sharing servers never meet
	convs  []locomoConv
	user   string
	agent  string
	// explain asks the ranked call for its trace (--explain).
	explain bool
	// traces, when set (--trace-out), receives each ranked call's trace as one JSON line.
	traces *traceWriter
}

func (m *membusEval) account(conv int) string { return fmt.Sprintf("locomo-%d", conv+1) + m.suffix }

// ingest sends every session of conversation conv as turn events (two turns an event, in
// dialogue order, the session date as message time plus a second a turn) and commits each
// session at its end with the synchronous commit RPC (kind compact).
func (m *membusEval) ingest(ctx context.Context, conv int, bar *bench.Progress) error {
	c, account := m.convs[conv], m.account(conv)
	for _, s := range c.Sessions {
		session := fmt.Sprintf("session-%d", s.N)
		subject := m.env.Names.Turns(account, session)
		for i := 0; i < len(s.Turns); i += 2 {
			ev := contract.TurnEvent{V: contract.Version, AccountID: account, UserID: m.user, AgentID: m.agent, SessionID: session, Source: "locomo"}
			var ids []string
			for j, t := range s.Turns[i:min(i+2, len(s.Turns))] {
				at := s.Date.Add(time.Duration(i+j) * time.Second)
				ev.Messages = append(ev.Messages, contract.Message{MessageID: t.DiaID, Position: j, Role: contract.RoleUser, Name: t.Speaker,
					Parts: []contract.Part{{Type: contract.PartText, Text: t.content()}}, CreatedAt: at})
				ev.SentAt = at
				ids = append(ids, t.DiaID)
			}
			ev.EventID = bus.MsgID(append([]string{account, session}, ids...)...)
			if _, err := bus.PublishJSON(ctx, m.env.JS, subject, ev.EventID, ev); err != nil {
				return fmt.Errorf("publish %s %s: %w", c.ID, session, err)
			}
			bar.Add(len(ids))
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		var res contract.CommitResult
		err := bus.Call(cctx, m.env.NC, m.env.Names.RPC(account, "commit"), contract.CommitRPCRequest{V: contract.Version,
			RequestID: "locomo-" + account + "-" + session, UserID: m.user, AgentID: m.agent, SessionID: session,
			Kind: contract.CommitCompact, Wait: true, TimeoutMS: int((4 * time.Minute).Milliseconds())}, &res)
		cancel()
		if err != nil {
			return fmt.Errorf("commit %s %s: %w", c.ID, session, err)
		}
		if res.Status != contract.StatusCompleted {
			return fmt.Errorf("commit %s %s: status %s (%s)", c.ID, session, res.Status, res.Reason)
		}
	}
	return nil
}

// answer asks recall twice: the protocol's ranked call (limit 20, `now` = the conversation's
// last session date) and a call with every default (limit 6, 4000 chars: what the agent
// would see). An item is credited with its sources (a memory's provenance, an archive item's
// one message); a digest with nothing.
func (m *membusEval) answer(ctx context.Context, conv int, q locomoQuestion) (evalAnswer, error) {
	now := m.convs[conv].lastDate()
	subject := m.env.Names.RPC(m.account(conv), "recall")
	var ranked, budget contract.RecallResponse
	if err := bus.Call(ctx, m.env.NC, subject, contract.RecallRequest{V: contract.Version, UserID: m.user, AgentID: m.agent,
		Query: q.Question, Limit: evalRankedLimit, MaxInjectedChars: evalRankedBudget, Now: &now, Trace: m.explain || m.traces != nil}, &ranked); err != nil {
		return evalAnswer{}, err
	}
	if err := m.traces.write(m.convs[conv].ID, q, ranked.Trace); err != nil {
		return evalAnswer{}, err
	}
	if err := bus.Call(ctx, m.env.NC, subject, contract.RecallRequest{V: contract.Version, UserID: m.user, AgentID: m.agent,
		Query: q.Question, Now: &now}, &budget); err != nil {
		return evalAnswer{}, err
	}
	items := func(its []contract.RecallItem) []evalItem {
		out := make([]evalItem, 0, len(its))
		for _, it := range its {
			var e evalItem
			if it.Kind != contract.KindDigest {
				e.sources = it.Sources
			}
			out = append(out, e)
		}
		return out
	}
	return evalAnswer{ranked: items(ranked.Items), budget: items(budget.Items), injected: len(budget.Block), trace: ranked.Trace}, nil
}

// evalResult is what one `membus eval locomo` run measured.
type evalResult struct {
	recall     []evalReport       // membus, then the baseline
	extraction []extractionReport // --extraction: per conversation, then "all"
	explain    []explainReport    // --explain: membus's lost gold turns by category
}

// evalLocomo runs membus (and the baseline) on the conversations: recall quality, or with
// p.extraction the extracted memories against the observations.
// With p.dataDir, it ingests into that dir and writes its manifest once membus stopped, or
// reuses the dir a previous run ingested (same data and embedder) and only recalls.
func evalLocomo(ctx context.Context, convs []locomoConv, p evalParams) (evalResult, error) {
	if p.dataDir == "" {
		res, _, err := evalLocomoIn(ctx, convs, p, nil)
		return res, err
	}
	if p.extraction || p.backend != (harness.Backend{}) {
		return evalResult{}, fmt.Errorf("%w keeps an embedded recall run's ingest: it goes with neither --extraction nor --backend real", errDataDir)
	}
	want := dataManifest{Eval: "locomo", Data: p.dataPath, DataSHA256: p.dataSHA256, Conversations: len(convs), Embedder: p.embedder, Version: p.version}
	for _, c := range convs {
		want.Turns += len(c.turns)
	}
	had, err := readDataDir(p.dataDir)
	if err != nil {
		return evalResult{}, err
	}
	if had != nil {
		if diffs := had.mismatch(want); diffs != "" {
			return evalResult{}, had.refuse(p.dataDir, diffs)
		}
		res, _, err := evalLocomoIn(ctx, convs, p, had)
		return res, err
	}
	if err := os.MkdirAll(p.dataDir, 0o755); err != nil {
		return evalResult{}, err
	}
	res, model, err := evalLocomoIn(ctx, convs, p, nil)
	if model != "" { // the ingest completed and membus has stopped: the data dir is whole
		want.Model, want.Ingested = model, time.Now().UTC().Round(time.Second)
		if werr := writeDataManifest(p.dataDir, want); werr != nil {
			return res, errors.Join(err, fmt.Errorf("%w %s: manifest: %w", errDataDir, p.dataDir, werr))
		}
	}
	return res, err
}

// evalLocomoIn is evalLocomo on a fresh membus (in p.dataDir when set), which ingests the
// conversations unless reuse names what that data dir already holds. It returns the embedder's
// model once the ingest completed ("" when it did not run or failed).
func evalLocomoIn(ctx context.Context, convs []locomoConv, p evalParams, reuse *dataManifest) (evalResult, string, error) {
	var ingested string // the model, once the ingest completed
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	env, closeEnv, err := harness.OpenIn(ctx, p.dataDir, p.sync, p.embedder, p.backend, logger, func(c *config.Config) {
		if p.fusion != "" {
			c.RecallFusion = p.fusion
		}
		if p.exactMax != nil {
			c.VectorExactMax = *p.exactMax
		}
		c.RecallMMR = p.mmr
		c.RecallPersonQueries = p.persons
		// One ingest fetch loop: a session's turns are then stored (given their seq) in the
		// order they were published, which is the order said. With two, a batch that commits
		// first takes the earlier seqs, and the neighbouring-turn lift, which places a message
		// by seq, ranked differently from one ingest to the next (docs/recall-quality.md).
		c.IngestWorkers = 1
		if p.candidates > 0 {
			c.RecallCandidates = p.candidates
		}
		if p.llmBaseURL != "" {
			c.LLMBaseURL, c.LLMModel, c.LLMAPIKey = p.llmBaseURL, p.llmModel, p.llmAPIKey
		}
	})
	if err != nil {
		return evalResult{}, "", err
	}
	defer closeEnv()
	m := &membusEval{env: env, convs: convs, user: "locomo-user", agent: "main"}
	if p.backend.RunID != "" {
		m.suffix = "-" + p.backend.RunID
	}
	turns := 0
	for _, c := range convs {
		turns += len(c.turns)
	}
	if reuse != nil {
		if diffs := reuse.mismatch(dataManifest{Eval: reuse.Eval, DataSHA256: reuse.DataSHA256, Conversations: reuse.Conversations,
			Turns: reuse.Turns, Embedder: reuse.Embedder, Model: env.Embedder.Model()}); diffs != "" {
			return evalResult{}, "", reuse.refuse(p.dataDir, diffs)
		}
		stored, err := storedMessages(ctx, env)
		if err != nil {
			return evalResult{}, "", err
		}
		fmt.Fprintf(p.notes, "membus: reused the ingest in %s (%d turns of %d conversations, %d messages stored, embedder %s, ingested %s by %s): nothing published\n",
			p.dataDir, reuse.Turns, reuse.Conversations, stored, reuse.Model, reuse.Ingested.Format(time.RFC3339), reuse.Version)
	} else {
		start := time.Now()
		bar := bench.NewProgress(p.progress, "ingest", turns)
		for i := range convs {
			if err := m.ingest(ctx, i, bar); err != nil {
				return evalResult{}, "", err
			}
		}
		bar.Done()
		fmt.Fprintf(p.notes, "membus: ingested and committed %d turns of %d conversations in %s (sync %s, embedder %s)\n",
			turns, len(convs), time.Since(start).Round(time.Millisecond), p.sync, env.Embedder.Model())
		if p.dataDir != "" {
			stored, err := storedMessages(ctx, env)
			if err != nil {
				return evalResult{}, "", err
			}
			fmt.Fprintf(p.notes, "membus: kept the ingest in %s (%d messages stored) for later runs with the same --data-dir\n", p.dataDir, stored)
		}
		ingested = env.Embedder.Model()
	}
	if p.extraction {
		extractor := "heuristic"
		if p.llmBaseURL != "" {
			extractor = "llm:" + p.llmModel
		}
		var trace io.Writer
		if p.traceOut != "" {
			f, err := os.Create(p.traceOut)
			if err != nil {
				return evalResult{}, ingested, err
			}
			defer f.Close()
			trace = f
		}
		ex, err := m.extraction(ctx, extractor, trace)
		return evalResult{extraction: ex}, ingested, err
	}
	start := time.Now()
	var explain *explainScore
	if p.explain {
		sourced, err := m.memorySources(ctx)
		if err != nil {
			return evalResult{}, ingested, err
		}
		m.explain, explain = true, newExplainScore(sourced)
	}
	if p.traceOut != "" {
		f, err := os.Create(p.traceOut)
		if err != nil {
			return evalResult{}, ingested, err
		}
		defer f.Close()
		m.traces = &traceWriter{w: f}
	}
	rep, err := runEval(ctx, convs, "membus", env.Embedder.Model(), evalWorkers, p.progress, m.answer, explain)
	if err != nil {
		return evalResult{}, ingested, err
	}
	fmt.Fprintf(p.notes, "membus: %d questions recalled (2 calls each) in %s\n", rep.Categories["1-4"].N+rep.Categories["5"].N, time.Since(start).Round(time.Millisecond))
	if p.fusion != "" && p.fusion != contract.FusionWeighted {
		rep.Config = "fusion-" + p.fusion
	}
	if p.exactMax != nil {
		rep.Config = strings.TrimPrefix(strings.TrimPrefix(rep.Config, "default")+fmt.Sprintf(" exact-max-%d", *p.exactMax), " ")
	}
	if p.mmr {
		rep.Config = strings.TrimPrefix(strings.TrimPrefix(rep.Config, "default")+" mmr", " ")
	}
	if p.persons {
		rep.Config = strings.TrimPrefix(strings.TrimPrefix(rep.Config, "default")+" person-queries", " ")
	}
	if p.candidates > 0 {
		rep.Config = strings.TrimPrefix(strings.TrimPrefix(rep.Config, "default")+fmt.Sprintf(" candidates-%d", p.candidates), " ")
	}
	reports := []evalReport{rep}
	if p.baseline == "bm25" {
		b, err := runEval(ctx, convs, "bm25", "none", 1, p.progress, bm25Answers(convs), nil)
		if err != nil {
			return evalResult{}, ingested, err
		}
		reports = append(reports, b)
	}
	res := evalResult{recall: reports}
	if explain != nil {
		res.explain = explain.reports()
	}
	return res, ingested, nil
}

// evalParams are the knobs of one `membus eval locomo` run.
type evalParams struct {
	backend  harness.Backend // zero: embedded (SQLite, embedded NATS)
	fusion   string          // recall fusion ("" = the default)
	exactMax *int            // vector_exact_max (nil = the default)
	mmr      bool            // recall_mmr: MMR diversity re-ranking (opt-in; off by default)
	// persons: recall_person_queries (opt-in; off by default)
	persons bool
	// candidates: recall_candidates, each side of each scope (0 = the default, 24)
	candidates int
	sync       string
	embedder   string
	baseline   string
	progress   io.Writer // progress bars (nil = none)
	notes      io.Writer // one line per phase
	// extraction: score the extracted memories against the observations instead of recall.
	extraction bool
	// explain: also break down where recall lost each gold turn it did not rank in the top 10.
	explain bool
	// traceOut: write each question's ranked-call trace to this file as JSON lines.
	traceOut string
	// dataDir: ingest into this dir and keep it, or reuse what a previous run ingested there
	// (--data-dir); dataPath and dataSHA256 name the data file, version the binary, in its manifest.
	dataDir, dataPath, dataSHA256, version string
	// llm*: an OpenAI-compatible chat model for extraction (empty: the heuristic extractor).
	llmBaseURL, llmModel, llmAPIKey string
}

// Command is `membus eval`: recall-quality evaluations run on a fresh in-process membus.
func Command() *cobra.Command {
	cmd := &cobra.Command{Use: "eval", Short: "measure recall quality on a benchmark data set (membus eval locomo --data FILE)"}
	cmd.AddCommand(locomoCommand())
	return cmd
}

// locomoCommand is `membus eval locomo`.
func locomoCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "locomo", Short: "recall quality on the LoCoMo benchmark (R@k by category), optionally beside a BM25 anchor", Args: cli.NoArgs}
	fs := cmd.Flags()
	data := fs.String("data", "", "LoCoMo JSON file, required (e.g. ../shared/data/locomo/locomo-dev.json)")
	baseline := fs.String("baseline", "", `"bm25": also run the README's BM25 anchor over raw turns through the same harness`)
	limitConvs := fs.Int("limit-conversations", 0, "evaluate only the first N conversations (0 = all)")
	embedder := fs.String("embedder", "hash", "embedder of the membus run (pinned: never what happens to be on disk)")
	syncMode := fs.String("sync", "interval", `JetStream durability of the embedded server: "interval" (fast; the default here) or "always"`)
	asJSON := fs.Bool("json", false, "print docs/design.md §10 JSON Lines on stdout")
	progress := fs.Bool("progress", false, "draw progress bars on stderr even when it is not a terminal")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	fusion := fs.String("fusion", contract.FusionWeighted, `recall fusion of the membus run: "weighted" (the default, 0.7 dense + 0.3 keyword), "rrf", or "dense" (the embedder alone, to measure it)`)
	backend := fs.String("backend", "embedded", harness.BackendUsage)
	exactMax := fs.Int("vector-exact-max", -1, "vector_exact_max of the membus run: 0 searches every user through the quantised index (the users here are small), to compare it with the exact search (negative: the default)")
	candidates := fs.Int("recall-candidates", 0, fmt.Sprintf("candidates recall takes from each side of each scope in the membus run (MEMBUS_RECALL_CANDIDATES, 1-%d; 0: the default, %d), to measure more or fewer; with --data-dir it only changes recall", contract.MaxRecallCandidates, contract.DefaultRecallCandidates))
	persons := fs.Bool("person-queries", false, "switch on recall's opt-in per-person queries (MEMBUS_RECALL_PERSON_QUERIES) in the membus run, to measure them; with --data-dir it only changes recall, so it compares on one ingest")
	mmr := fs.Bool("mmr", false, "switch on recall's opt-in MMR diversity re-ranking (MEMBUS_RECALL_MMR) in the membus run, to measure it; with --data-dir it only changes recall, so it compares on one ingest")
	explain := fs.Bool("explain", false, "also break down, per category, where recall lost each gold turn outside its top 10 (ranked 11-20, a candidate past the limit, collapsed, dropped, or no candidate with or without a memory sourced there)")
	traceOut := fs.String("trace-out", "", "write each question's ranked-call trace (every candidate, its score parts and sources) to this file as JSON lines, to study the ranking offline; with --extraction, each observation with the best memory sourced at its evidence and its F1")
	extraction := fs.Bool("extraction", false, "measure the extracted memories against LoCoMo's observations (sourced, matched, duplicates, restated turns) instead of recall")
	bounds := fs.Bool("extraction-bounds", false, "print, from the data alone (membus does not run), the share of LoCoMo's observations that the best memory made of the evidence turn's own words could match, per shape: a sentence, runs of clauses, any span, any subset of its words")
	dataDir := fs.String("data-dir", "", "keep the membus run's data in this dir: when it is missing or empty, the run ingests into it as usual and leaves it there with a manifest (the data file's sha256, the embedder and model, the membus version); when it holds a manifest, the run skips the ingest and only recalls over the kept data, so two binaries' ranking compare on one ingest (and without the ingest's minute). A manifest of another data file, --limit-conversations or embedder is refused. Embedded backend only; not with --extraction")
	llmBaseURL := fs.String("llm-base-url", "", "OpenAI-compatible chat base URL to extract with (empty: the heuristic extractor, membus's default)")
	llmModel := fs.String("llm-model", "", "its chat model (with --llm-base-url)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
		return cli.Exit(func() int {
			switch {
			case *data == "":
				fmt.Fprintln(stderr, "membus eval locomo: --data FILE is required")
				return 2
			case *baseline != "" && *baseline != "bm25":
				fmt.Fprintf(stderr, "membus eval locomo: --baseline must be bm25, got %q\n", *baseline)
				return 2
			case *syncMode != "always" && *syncMode != "interval":
				fmt.Fprintf(stderr, "membus eval locomo: --sync must be always or interval, got %q\n", *syncMode)
				return 2
			case *embedder == "auto":
				fmt.Fprintln(stderr, "membus eval locomo: --embedder must name an embedder (hash, onnx, openai), not auto")
				return 2
			case *limitConvs < 0:
				fmt.Fprintln(stderr, "membus eval locomo: --limit-conversations must be ≥ 0")
				return 2
			case *candidates != 0 && contract.CheckRecallCandidates(*candidates) != nil:
				fmt.Fprintf(stderr, "membus eval locomo: --recall-candidates %v (0: the default)\n", contract.CheckRecallCandidates(*candidates))
				return 2
			case *extraction && *explain:
				fmt.Fprintln(stderr, "membus eval locomo: --explain breaks down recall; it does not go with --extraction")
				return 2
			case *extraction && *baseline != "":
				fmt.Fprintln(stderr, "membus eval locomo: --baseline is a recall anchor; it does not go with --extraction")
				return 2
			case *bounds && (*extraction || *explain || *baseline != ""):
				fmt.Fprintln(stderr, "membus eval locomo: --extraction-bounds reads the data alone; it does not go with --extraction, --explain or --baseline")
				return 2
			case *dataDir != "" && (*extraction || *bounds || *backend != "embedded"):
				fmt.Fprintln(stderr, "membus eval locomo: --data-dir keeps the ingest of an embedded recall run; it goes with neither --extraction, --extraction-bounds nor --backend real")
				return 2
			case (*llmBaseURL == "") != (*llmModel == ""):
				fmt.Fprintln(stderr, "membus eval locomo: --llm-base-url and --llm-model go together")
				return 2
			}
			convs, err := loadLocomo(*data)
			if err != nil {
				fmt.Fprintf(stderr, "membus eval locomo: %v\n", err)
				return 1
			}
			if *limitConvs > 0 && *limitConvs < len(convs) {
				convs = convs[:*limitConvs]
			}
			if *bounds {
				write := writeBoundsTable
				if *asJSON {
					write = writeBoundsJSON
				}
				if err := write(stdout, boundsOf(convs)); err != nil {
					fmt.Fprintf(stderr, "membus eval locomo: %v\n", err)
					return 1
				}
				return 0
			}
			stopProfile, err := harness.CPUProfile(*cpuProfile)
			if err != nil {
				fmt.Fprintf(stderr, "membus eval locomo: %v\n", err)
				return 1
			}
			defer stopProfile()
			p := evalParams{sync: *syncMode, embedder: *embedder, baseline: *baseline, fusion: *fusion, mmr: *mmr, persons: *persons, notes: stderr,
				extraction: *extraction, explain: *explain, traceOut: *traceOut, llmBaseURL: *llmBaseURL, llmModel: *llmModel, llmAPIKey: os.Getenv("MEMBUS_LLM_API_KEY")}
			if *exactMax >= 0 {
				p.exactMax = exactMax
			}
			p.candidates = *candidates
			if *dataDir != "" {
				if p.dataSHA256, err = fileSHA256(*data); err != nil {
					fmt.Fprintf(stderr, "membus eval locomo: %v\n", err)
					return 1
				}
				p.dataDir, p.dataPath, p.version = *dataDir, *data, cmd.Root().Version
				if p.version == "" {
					p.version = "unknown"
				}
			}
			rb, err := harness.BackendFlag(*backend)
			if err != nil {
				fmt.Fprintf(stderr, "membus eval locomo: %v\n", err)
				return 2
			}
			p.backend = rb
			p.progress = harness.Progress(*progress, stderr)
			ctx, stop := app.SignalContext()
			defer stop()
			start := time.Now()
			res, err := evalLocomo(ctx, convs, p)
			if err != nil {
				fmt.Fprintf(stderr, "membus eval locomo: %v\n", err)
				return 1
			}
			fmt.Fprintf(stderr, "membus eval locomo: %d conversations in %s\n", len(convs), time.Since(start).Round(time.Millisecond))
			if *embedder == "onnx" {
				// An int8 model's vectors, and so a few ranks, depend on the CPU's int8 kernels.
				fmt.Fprintf(stderr, "membus eval locomo: the model ran on %s\n", onnx.CPU())
			}
			switch {
			case *extraction && *asJSON:
				err = writeExtractionJSON(stdout, res.extraction)
			case *extraction:
				err = writeExtractionTable(stdout, res.extraction)
			case *asJSON:
				if err = writeEvalJSON(stdout, res.recall...); err == nil && *explain {
					err = writeExplainJSON(stdout, res.explain)
				}
			default:
				if err = writeEvalTable(stdout, res.recall...); err == nil && *explain {
					fmt.Fprintln(stdout, "\nwhere membus lost the gold turns (shares of each category's gold turns):")
					err = writeExplainTable(stdout, res.explain)
				}
			}
			if err != nil {
				fmt.Fprintf(stderr, "membus eval locomo: %v\n", err)
				return 1
			}
			return 0
		}())
	}
	return cmd
}

// writeEvalJSON writes one docs/design.md §10 line per report.
func writeEvalJSON(w io.Writer, reports ...evalReport) error {
	var buf bytes.Buffer
	for _, r := range reports {
		b, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("eval json: %w", err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// writeEvalTable writes the human table: per system, the headline (1–4), each category, and
// the adversarial category apart.
func writeEvalTable(w io.Writer, reports ...evalReport) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "system\tembedder\tcategory\tn\tR@1\tR@5\tR@10\tR@20\tall@10\tbudget R\tinjected chars\tturns@10\t")
	for _, r := range reports {
		for _, c := range evalCategories {
			cat, ok := r.Categories[c.key]
			if !ok {
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.0f\t%.2f\t\n", r.System, r.Embedder, c.label, cat.N,
				cat.R1, cat.R5, cat.R10, cat.R20, cat.All10, cat.BudgetRecall, cat.AvgInjectedChars, cat.Turns10)
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write eval table: %w", err)
	}
	return nil
}
