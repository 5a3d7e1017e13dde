package recall

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/embed"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/vector"
)

// Query preparation (docs/design.md §6).
const (
	maxQueryChars = 4000
	minQueryChars = 5
)

var (
	injected        = regexp.MustCompile(`(?s)<relevant-memories>.*?</relevant-memories>|<membus-context>.*?</membus-context>`)
	temporalQuery   = regexp.MustCompile(`(?i)\b(when|what time|what day|what year|date|yesterday|last (week|month|year)|ago|before|after|since)\b`)
	preferenceQuery = regexp.MustCompile(`(?i)\b(like|likes|love|loves|prefer|prefers|favou?rite|enjoy|enjoys|hate|hates|dislike)\b`)
)

// candidate is one scored memory, digest or archive message.
type candidate struct {
	id, kind, scope, category string
	text                      string // memory text; for an archive item the indexed line until resolved from SQL
	sources                   []store.Source
	createdAt                 time.Time
	eventTime                 *time.Time
	abstract                  string     // memories and digests
	msg                       archiveRef // archive items
	parts                     contract.ScoreParts
	score                     float64
}

// Recall answers a recall request (docs/design.md §6). It never fails the turn because the vector store
// is down: it answers from keyword search over SQL, or empty, with degraded set.
func (s *Service) Recall(ctx context.Context, account string, req contract.RecallRequest) (contract.RecallResponse, error) {
	start := time.Now()
	defer func() { s.latency(time.Since(start).Seconds()) }()
	resp := contract.RecallResponse{V: contract.Version, Items: []contract.RecallItem{}, Embedder: s.d.Embedder.Model()}
	if req.UserID == "" {
		return resp, fmt.Errorf("%w: user_id is required", errBadRequest)
	}
	limit := s.cfg.Limit
	if req.Limit > 0 {
		limit = req.Limit
	}
	threshold := s.cfg.ScoreThreshold
	if req.ScoreThreshold != nil {
		threshold = *req.ScoreThreshold
	}
	budget := s.cfg.MaxInjectedChars
	if req.MaxInjectedChars > 0 {
		budget = req.MaxInjectedChars
	}
	now := s.d.Now()
	if req.Now != nil {
		now = *req.Now
	}
	query := strings.TrimSpace(injected.ReplaceAllString(req.Query, ""))
	if r := []rune(query); len(r) > maxQueryChars {
		query = string(r[len(r)-maxQueryChars:])
	}
	if len([]rune(query)) < minQueryChars {
		return resp, nil
	}
	scopes := req.Scopes
	if len(scopes) == 0 {
		scopes = req.TargetTypes
	}
	if len(scopes) == 0 {
		scopes = s.cfg.DefaultScopes
	}

	if s.d.Sync != nil {
		if err := s.d.Sync(ctx); err != nil {
			// Behind the event stream: answer from what this replica has, and say so.
			s.log.Warn("the local index is behind: recall answers degraded", "err", err)
			s.degraded(1)
			resp.Degraded = true
		}
	}
	f, err := s.search(ctx, account, req, scopes, query)
	if err != nil {
		if ctx.Err() != nil {
			return resp, ctx.Err()
		}
		s.log.Warn("vector search failed: answering from keyword search alone", "err", err)
		s.degraded(1)
		resp.Degraded = true
		hits, err := s.keywordFallback(ctx, account, req, scopes, query)
		if err != nil {
			s.log.Warn("degraded keyword search failed: answering empty", "err", err)
			return resp, nil
		}
		rows, readErr := s.d.Store.RecallRows(ctx, account, req.UserID, memoryIDs(hits))
		f = found{hits: [][]vector.Hit{hits}, rows: [][]store.RecallRow{rows}, readErr: readErr}
	}
	if f.readErr != nil {
		if resp.Degraded {
			return resp, nil
		}
		return resp, f.readErr
	}
	cands, dropped := s.candidates(ctx, account, f, query, now)
	if req.Trace {
		resp.Trace = append(resp.Trace, dropped...)
	}
	if s.cfg.MMR {
		cands = mmrRerank(cands, threshold)
	}
	s.selectItems(ctx, account, req, cands, limit, threshold, budget, &resp)
	return resp, nil
}

// found is what recall's search found: the hits, and the SQL rows of the active memories
// among them (or the error reading them).
type found struct {
	hits     [][]vector.Hit // by scope, in scope order
	rows     [][]store.RecallRow
	readErr  error
	contexts map[speakerSession]float64 // sessionContexts
	persons  map[string]float64         // personScores, by candidate id
}

// nameVectors are the vectors of the names the query mentions (queryNames), each embedded alone.
func (s *Service) nameVectors(ctx context.Context, query string) ([][]float32, error) {
	var names [][]float32
	for _, n := range queryNames(query) {
		v, err := embed.EmbedQuery(ctx, s.d.Embedder, []string{n})
		if err != nil {
			return nil, fmt.Errorf("%q: %w", n, err)
		}
		names = append(names, v[0])
	}
	return names, nil
}

// search runs the dense and keyword search of every scope in parallel, each bounded by the
// search timeout, and reads each scope's memory rows from SQL as soon as its search returns,
// while the other scopes may still search. The error is the searches'.
func (s *Service) search(ctx context.Context, account string, req contract.RecallRequest, scopes []string, query string) (found, error) {
	sctx, cancel := context.WithTimeout(ctx, s.cfg.SearchTimeout)
	defer cancel()
	vecs, err := embed.EmbedQuery(sctx, s.d.Embedder, []string{query})
	if err != nil {
		return found{}, fmt.Errorf("embed query: %w", err)
	}
	qv := vecs[0]
	var contexts map[speakerSession]float64
	var persons [][]float32
	var wg sync.WaitGroup
	if s.cfg.Fusion != contract.FusionDense && learned(s.d.Embedder) {
		// With the question as asked, not moved from the names: a speaker's session context
		// is about that person (docs/recall-quality.md, the session-context round).
		wg.Add(1)
		go func() {
			defer wg.Done()
			contexts = s.sessionContexts(sctx, account, req.UserID, vecs[0])
			if s.cfg.PersonQueries {
				persons = s.personQueries(sctx, query, vecs[0], contexts)
			}
		}()
	}
	if s.cfg.Fusion != contract.FusionDense && learned(s.d.Embedder) {
		// The query's vector moved away from those of the names it mentions (query.go). Each
		// name is embedded alone, once: the embedding cache keeps it, and an int8 model's
		// vector for a text depends on the batch it ran in, so a name embedded beside another
		// text would move the ranking with whatever was asked first. A name that cannot be
		// embedded leaves the query where it is: the move refines the search, and failing it
		// would send the whole recall down to keywords alone.
		if names, err := s.nameVectors(sctx, query); err != nil {
			s.log.Warn("embed a name of the query: searching with the query as asked", "err", err)
		} else if len(names) > 0 {
			qv = awayFrom(qv, names, nameWeight)
		}
	}
	// Each scope's hits, rows and errors in its own slot, joined in scope order: the scopes
	// finish in any order, and the order of the hits decides the ranks' ties under RRF and the
	// order of the trace's dropped hits.
	us := uniqueScopes(scopes)
	hits := make([][]vector.Hit, len(us))
	rows := make([][]store.RecallRow, len(us))
	errs := make([]error, len(us))
	readErrs := make([]error, len(us))
	for i, scope := range us {
		f := vector.Filter{AccountID: account, UserID: req.UserID, Scopes: []string{scope}}
		if scope == contract.ScopeAgent && req.AgentID != "" {
			f.AgentID = req.AgentID
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			hs, err := s.d.Vectors.Search(sctx, f, qv, query, s.cfg.CandidatesPerSide)
			if err != nil {
				errs[i] = fmt.Errorf("search %s: %w", scope, err)
				return
			}
			hits[i] = hs
			// The request's context, not the search's: the rows are read within the request's time.
			rows[i], readErrs[i] = s.d.Store.RecallRows(ctx, account, req.UserID, memoryIDs(hs))
		}()
	}
	wg.Wait()
	f := found{hits: hits, rows: rows, readErr: errors.Join(readErrs...), contexts: contexts}
	if err := errors.Join(errs...); err != nil {
		return f, err
	}
	f.persons = s.personScores(sctx, account, req.UserID, persons, hits)
	return f, nil
}

// eachHit yields the hits of every scope, in scope order.
func eachHit(byScope [][]vector.Hit) iter.Seq[*vector.Hit] {
	return func(yield func(*vector.Hit) bool) {
		for _, hs := range byScope {
			for i := range hs {
				if !yield(&hs[i]) {
					return
				}
			}
		}
	}
}

// memoryIDs are the ids of the hits that are memories or digests (archive messages are not
// memory rows).
func memoryIDs(hits []vector.Hit) []string {
	var ids []string
	for _, h := range hits {
		if h.Point.Kind != contract.KindArchive {
			ids = append(ids, h.ID)
		}
	}
	return ids
}

// uniqueScopes keeps the known scopes, once each, in order.
func uniqueScopes(scopes []string) []string {
	var out []string
	for _, sc := range scopes {
		if contract.ValidScope(sc) && !containsString(out, sc) {
			out = append(out, sc)
		}
	}
	return out
}

func containsString(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// candidates checks the hits against their SQL rows (superseded, deleted or foreign memories
// have none: they never come back, even while their index delete is pending) and scores them.
func (s *Service) candidates(ctx context.Context, account string, f found, query string, now time.Time) ([]candidate, []contract.TraceEntry) {
	n, nRows := 0, 0
	for i := range f.hits {
		n += len(f.hits[i])
		nRows += len(f.rows[i])
	}
	active := make(map[string]*store.RecallRow, nRows)
	for _, rs := range f.rows {
		for i := range rs {
			active[rs[i].ID] = &rs[i]
		}
	}
	var dropped []contract.TraceEntry
	seen := make(map[string]bool, n)
	cands := make([]candidate, 0, n)
	dense, keyword := make([]float64, 0, n), make([]float64, 0, n)
	for h := range eachHit(f.hits) {
		if seen[h.ID] {
			continue
		}
		seen[h.ID] = true
		var c candidate
		if h.Point.Kind == contract.KindArchive {
			ref, ok := archiveRefOf(h.Point)
			if !ok {
				dropped = append(dropped, contract.TraceEntry{ID: h.ID, Scope: contract.ScopeArchive, Dropped: "archive point without its message reference"})
				continue
			}
			c = candidate{id: h.ID, kind: contract.KindArchive, scope: contract.ScopeArchive, text: h.Point.Text, msg: ref,
				sources: []store.Source{{SessionID: ref.session, MessageID: ref.messageID}}, createdAt: h.Point.CreatedAt}
		} else {
			m, ok := active[h.ID]
			if !ok {
				dropped = append(dropped, contract.TraceEntry{ID: h.ID, Scope: h.Point.Scope, Dropped: "inactive in SQL (superseded, deleted or foreign)"})
				continue
			}
			kind := contract.KindMemory
			if m.Category == "digest" {
				kind = contract.KindDigest
			}
			c = candidate{id: m.ID, kind: kind, scope: m.Scope, category: m.Category, text: m.Text, abstract: m.Abstract,
				sources: m.Sources, createdAt: m.CreatedAt, eventTime: m.EventTime}
			if kind == contract.KindDigest {
				c.sources = nil
			}
		}
		cands = append(cands, c)
		dense = append(dense, clamp01(embed.ScaleCosine(s.d.Embedder, h.Dense)))
		keyword = append(keyword, h.Keyword)
	}
	var placesOf func() map[store.Source]place
	if s.cfg.Fusion != contract.FusionDense {
		placesOf = s.messagePlaces(ctx, account, cands)
	}
	maxKW := 0.0
	for _, k := range keyword {
		maxKW = max(maxKW, k)
	}
	var dRank, kRank []int
	if s.cfg.Fusion == contract.FusionRRF {
		dRank = ranks(len(cands), func(i int) float64 { return dense[i] })
		kRank = ranks(len(cands), func(i int) float64 { return keyword[i] })
	}
	isTemporal, isPreference := temporalQuery.MatchString(query), preferenceQuery.MatchString(query)
	qTerms := termSet(query)
	inPeriod := periodMatcher(query, now, cands)
	for i := range cands {
		c := &cands[i]
		c.parts.Dense = dense[i]
		if maxKW > 0 {
			c.parts.Keyword = keyword[i] / maxKW
		}
		switch s.cfg.Fusion {
		case contract.FusionRRF:
			c.parts.Fused = rrfFusion(dRank[i], kRank[i])
		case contract.FusionDense:
			c.parts.Fused = c.parts.Dense
		default:
			c.parts.Fused = weightedFusion(c.parts.Dense, c.parts.Keyword)
		}
		if s.cfg.Fusion != contract.FusionDense {
			c.parts.Boost = boost(boostInput{kind: c.kind, category: c.category, temporal: isTemporal, preference: isPreference, overlap: overlapTerms(qTerms, c.text), inPeriod: inPeriod(c)})
		}
		c.score = c.parts.Fused + c.parts.Boost
	}
	if s.cfg.Fusion != contract.FusionDense {
		places := placesOf()
		liftByNeighbours(cands, places)
		penaliseQuestions(cands)
		if learned(s.d.Embedder) {
			// A question naming two of the user's speakers embeds as a mix of two persons'
			// halves, so its dense part says less: it does not rank by it again after the
			// lift, unless the per-person queries rank by each half (docs/recall-quality.md,
			// the two-speaker round: with them, skipping it too loses multi-hop).
			if f.persons != nil || len(namedSpeakers(query, f.contexts)) < 2 {
				addDenseAfterLift(cands)
			}
			addSpecifics(cands, query)
			addSessionContext(cands, places, f.contexts)
			addPersons(cands, f.persons)
		}
	}
	if s.cfg.Decay {
		for i := range cands {
			c := &cands[i]
			at := c.createdAt
			if c.eventTime != nil {
				at = *c.eventTime
			}
			c.parts.Decay = decayFactor(c.category, at, now)
			c.score *= c.parts.Decay
		}
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].score != cands[j].score {
			return cands[i].score > cands[j].score
		}
		return cands[i].id < cands[j].id
	})
	return cands, dropped
}

// mmrRerank reorders the candidates at or above the threshold by MMR (λ 0.7, Jaccard
// similarity of their terms); the rest keep their order behind them.
func mmrRerank(cands []candidate, threshold float64) []candidate {
	n := 0
	for n < len(cands) && cands[n].score >= threshold {
		n++
	}
	scores := make([]float64, n)
	for i := range scores {
		scores[i] = cands[i].score
	}
	terms := make([]map[string]bool, n)
	for i := range terms {
		terms[i] = termSet(cands[i].text)
	}
	order := mmrOrder(scores, func(i, j int) float64 { return jaccard(terms[i], terms[j]) })
	out := make([]candidate, 0, len(cands))
	for _, i := range order {
		out = append(out, cands[i])
	}
	return append(out, cands[n:]...)
}

// selectItems applies min score, limit and the injection budget, collapses an item whose
// messages a better item already states, and writes the items, the block and the trace.
func (s *Service) selectItems(ctx context.Context, account string, req contract.RecallRequest, cands []candidate, limit int, threshold float64, budget int, resp *contract.RecallResponse) {
	itemText := func(c *candidate) string {
		if req.PreferAbstract && c.kind != contract.KindArchive && c.abstract != "" {
			return cutText(c.abstract, s.cfg.MaxItemChars)
		}
		return cutText(c.text, s.cfg.MaxItemChars)
	}
	// The user scope (with the archive, the user's own history) gets at most UserShare of the
	// budget when the agent scope has candidates; what the agent's items do not need of their
	// share flows back.
	userBudget := budget
	agentCap := budget - int(float64(budget)*s.cfg.UserShare)
	agentNeed, agentItems, agentHas := 0, 0, false
	for i := range cands {
		c := &cands[i]
		if c.scope != contract.ScopeAgent || c.score < threshold || agentItems >= limit {
			continue
		}
		agentHas = true
		if t := len(itemText(c)); agentNeed+t <= agentCap {
			agentNeed += t
			agentItems++
		}
	}
	if agentHas {
		userBudget = budget - agentNeed
	}
	resolved := s.resolveSure(ctx, account, cands, limit, threshold)
	covered := map[store.Source]string{} // message → the kept item that states it
	used, usedUser := 0, 0
	var lines []string
	for i := range cands {
		c := &cands[i]
		keep, why := true, ""
		switch {
		case c.score < threshold:
			keep, why = false, fmt.Sprintf("score %.3f below threshold %.2f", c.score, threshold)
		case len(resp.Items) >= limit:
			keep, why = false, "over the limit"
		}
		if keep && c.kind == contract.KindArchive {
			err, ok := resolved[i]
			if !ok {
				err = s.resolveArchive(ctx, account, c)
			}
			if err != nil {
				keep, why = false, "archived message not in SQL: "+err.Error()
			}
		}
		if keep {
			if by, ok := collapsedBy(covered, c.sources); ok {
				keep, why = false, "collapsed: "+by+" states the same message"
			}
		}
		text := ""
		if keep {
			text = itemText(c)
			switch {
			case used+len(text) > budget:
				keep, why = false, "over the injection budget"
			case c.scope != contract.ScopeAgent && usedUser+len(text) > userBudget:
				keep, why = false, "over the user scope's share of the budget"
			}
		}
		if req.Trace {
			resp.Trace = append(resp.Trace, contract.TraceEntry{ID: c.id, Scope: c.scope, Score: c.score, Parts: c.parts, Kept: keep, Dropped: why,
				Sources: sourceIDs(c.sources)})
		}
		if !keep {
			continue
		}
		used += len(text)
		if c.scope != contract.ScopeAgent {
			usedUser += len(text)
		}
		for _, src := range c.sources {
			if _, ok := covered[src]; !ok {
				covered[src] = c.id
			}
		}
		parts := c.parts
		item := contract.RecallItem{
			ID: c.id, Kind: c.kind, Scope: c.scope, Category: c.category, Score: c.score,
			Parts: &parts, Text: text, Sources: sourceIDs(c.sources), CreatedAt: c.createdAt, EventTime: c.eventTime,
		}
		resp.Items = append(resp.Items, item)
		lines = append(lines, blockLine(item))
	}
	if len(lines) > 0 {
		resp.Block = "<relevant-memories>\n" + strings.Join(lines, "\n") + "\n</relevant-memories>"
	}
}

// resolveSure resolves, in parallel, the archive candidates selectItems reaches for certain:
// those among the first limit at or above the threshold (the candidates below it come after
// all of those, MMR or not, and fewer than limit items are kept before the limit-th). Each is
// a read of SQL that the selection would otherwise make one after the other on the request's
// path. It returns each one's error (nil when resolved) by its index in cands.
func (s *Service) resolveSure(ctx context.Context, account string, cands []candidate, limit int, threshold float64) map[int]error {
	sure := sureArchives(cands, limit, threshold)
	errs := make([]error, len(sure))
	var wg sync.WaitGroup
	for j, i := range sure {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[j] = s.resolveArchive(ctx, account, &cands[i])
		}()
	}
	wg.Wait()
	out := make(map[int]error, len(sure))
	for j, i := range sure {
		out[i] = errs[j]
	}
	return out
}

// sureArchives are the indices of the archive candidates among the first limit at or above
// the threshold.
func sureArchives(cands []candidate, limit int, threshold float64) []int {
	var sure []int
	for i := 0; i < len(cands) && i < limit && cands[i].score >= threshold; i++ {
		if cands[i].kind == contract.KindArchive {
			sure = append(sure, i)
		}
	}
	return sure
}

// sourceIDs are the message ids of sources.
func sourceIDs(sources []store.Source) []string {
	out := make([]string, 0, len(sources))
	for _, src := range sources {
		out = append(out, src.MessageID)
	}
	return out
}

// collapsedBy reports the kept item that already states every message of sources (an archive
// message and a memory stated in it take one slot, not two: the better-scoring one, kept first).
func collapsedBy(covered map[store.Source]string, sources []store.Source) (string, bool) {
	if len(sources) == 0 {
		return "", false
	}
	by := ""
	for _, src := range sources {
		id, ok := covered[src]
		if !ok {
			return "", false
		}
		by = id
	}
	return by, true
}

func blockLine(it contract.RecallItem) string {
	var prefix string
	switch it.Kind {
	case contract.KindArchive:
		prefix = "- [archive " + it.CreatedAt.Format("2006-01-02") + "] "
	default:
		prefix = "- [" + it.Category + "] "
		if it.EventTime != nil {
			prefix += "(" + it.EventTime.Format("2006-01-02") + ") "
		}
	}
	return prefix + strings.ReplaceAll(it.Text, "\n", "\n  ")
}

// cutText cuts at a line boundary when it can, else at a word, to at most n bytes (so at most
// n characters), the "…" marker included.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ellipsis = "…"
	cut := s[:n]
	if i := strings.LastIndexByte(cut, '\n'); i > n/2 {
		return cut[:i]
	}
	cut = s[:max(0, n-len(ellipsis))]
	if i := strings.LastIndexByte(cut, ' '); i > n/2 {
		return cut[:i] + ellipsis
	}
	return strings.ToValidUTF8(cut, "") + ellipsis
}

func clamp01(v float64) float64 { return max(0, min(1, v)) }

func termSet(s string) map[string]bool {
	out := map[string]bool{}
	for _, t := range vector.Terms(s) {
		out[t] = true
	}
	return out
}

// overlapTerms is the share of the query's terms q that text contains. It counts the
// distinct matches in a short list instead of building the text's term set: recall takes it
// for every candidate of every request.
func overlapTerms(q map[string]bool, text string) float64 {
	if len(q) == 0 {
		return 0
	}
	var hit []string // distinct terms of text in q: at most len(q)
	vector.EachTerm(text, func(t string) bool {
		if q[t] && !slices.Contains(hit, t) {
			hit = append(hit, t)
		}
		return true
	})
	return float64(len(hit)) / float64(len(q))
}

// archiveRef names the archived message an archive point is.
type archiveRef struct {
	session, messageID, archiveID string
	speaker                       string // "" in an index that predates it
	seq                           int64
}

func archiveRefOf(p vector.Point) (archiveRef, bool) {
	seq, err := strconv.ParseInt(p.Payload["seq"], 10, 64)
	r := archiveRef{session: p.Payload["session_id"], messageID: p.Payload["message_id"], archiveID: p.Payload["archive_id"], speaker: p.Payload["speaker"], seq: seq}
	return r, err == nil && r.session != "" && r.messageID != "" && r.archiveID != ""
}
