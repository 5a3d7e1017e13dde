package recall

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/memory"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/vector"
)

// Fusion weights and boosts (SPEC §6 "Score scale").
const (
	denseWeight     = 0.7
	keywordWeight   = 0.3
	leafBoost       = 0.12
	temporalBoost   = 0.10
	preferenceBoost = 0.08
	maxLexicalBoost = 0.2
	maxQueryChars   = 4000
	minQueryChars   = 5
)

var (
	injected        = regexp.MustCompile(`(?s)<relevant-memories>.*?</relevant-memories>|<membus-context>.*?</membus-context>`)
	temporalQuery   = regexp.MustCompile(`(?i)\b(when|what time|what day|what year|date|yesterday|last (week|month|year)|ago|before|after|since)\b`)
	preferenceQuery = regexp.MustCompile(`(?i)\b(like|likes|love|loves|prefer|prefers|favou?rite|enjoy|enjoys|hate|hates|dislike)\b`)
)

type candidate struct {
	hit   vector.Hit
	mem   store.Memory
	parts contract.ScoreParts
	score float64
}

// Recall answers a recall request (SPEC §6).
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
		scopes = []string{contract.ScopeUser, contract.ScopeAgent}
	}
	vecs, err := s.d.Embedder.Embed(ctx, []string{query})
	if err != nil {
		return resp, fmt.Errorf("embed query: %w", err)
	}

	// Search the scopes in parallel, CandidatesPerSide from dense and keyword search each.
	var mu sync.Mutex
	var hits []vector.Hit
	var wg sync.WaitGroup
	var searchErr error
	for _, scope := range scopes {
		if scope != contract.ScopeUser && scope != contract.ScopeAgent {
			continue // archive search arrives with the recall issue
		}
		f := vector.Filter{AccountID: account, UserID: req.UserID, Scopes: []string{scope}}
		if scope == contract.ScopeAgent && req.AgentID != "" {
			f.AgentID = req.AgentID
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			hs, err := s.d.Vectors.Search(ctx, f, vecs[0], query, s.cfg.CandidatesPerSide)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				searchErr = err
				return
			}
			hits = append(hits, hs...)
		}()
	}
	wg.Wait()
	if searchErr != nil {
		s.log.Warn("vector search failed: answering degraded", "err", searchErr)
		s.degraded(1)
		resp.Degraded = true
		return resp, nil
	}

	// SQL is the truth: superseded, deleted or foreign rows never come back.
	ids := make([]string, 0, len(hits))
	for _, h := range hits {
		ids = append(ids, h.ID)
	}
	rows, err := s.d.Store.MemoriesByID(ctx, account, req.UserID, ids)
	if err != nil {
		return resp, err
	}
	active := map[string]store.Memory{}
	for _, m := range rows {
		if m.Active() {
			active[m.ID] = m
		}
	}
	maxKW := 0.0
	for _, h := range hits {
		maxKW = max(maxKW, h.Keyword)
	}
	isTemporal, isPreference := temporalQuery.MatchString(query), preferenceQuery.MatchString(query)
	qTerms := termSet(query)
	seen := map[string]bool{}
	var cands []candidate
	for _, h := range hits {
		if seen[h.ID] {
			continue
		}
		seen[h.ID] = true
		m, ok := active[h.ID]
		if !ok {
			if req.Trace {
				resp.Trace = append(resp.Trace, contract.TraceEntry{ID: h.ID, Scope: h.Point.Scope, Dropped: "inactive in SQL (superseded, deleted or foreign)"})
			}
			continue
		}
		c := candidate{hit: h, mem: m}
		c.parts.Dense = clamp01(h.Dense)
		if maxKW > 0 {
			c.parts.Keyword = h.Keyword / maxKW
		}
		c.parts.Fused = denseWeight*c.parts.Dense + keywordWeight*c.parts.Keyword
		boost := leafBoost
		if isTemporal && m.Category == memory.Event {
			boost += temporalBoost
		}
		if isPreference && m.Category == memory.Preference {
			boost += preferenceBoost
		}
		boost += maxLexicalBoost * overlap(qTerms, m.Text)
		c.parts.Boost = boost
		c.score = c.parts.Fused + boost
		cands = append(cands, c)
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].score != cands[j].score {
			return cands[i].score > cands[j].score
		}
		return cands[i].mem.ID < cands[j].mem.ID
	})
	itemText := func(c candidate) string {
		if req.PreferAbstract && c.mem.Abstract != "" {
			return cutText(c.mem.Abstract, s.cfg.MaxItemChars)
		}
		return cutText(c.mem.Text, s.cfg.MaxItemChars)
	}
	// The user scope gets at most UserShare of the budget when the agent scope has candidates;
	// what the agent's items do not need of their share flows back to the user scope.
	userBudget := budget
	agentCap := budget - int(float64(budget)*s.cfg.UserShare)
	agentNeed, agentItems, agentHas := 0, 0, false
	for _, c := range cands {
		if c.mem.Scope != contract.ScopeAgent || c.score < threshold || agentItems >= limit {
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
	used, usedUser := 0, 0
	var lines []string
	for _, c := range cands {
		keep, why := true, ""
		text := itemText(c)
		switch {
		case c.score < threshold:
			keep, why = false, fmt.Sprintf("score %.3f below threshold %.2f", c.score, threshold)
		case len(resp.Items) >= limit:
			keep, why = false, "over the limit"
		case used+len(text) > budget:
			keep, why = false, "over the injection budget"
		case c.mem.Scope == contract.ScopeUser && usedUser+len(text) > userBudget:
			keep, why = false, "over the user scope's share of the budget"
		}
		if req.Trace {
			resp.Trace = append(resp.Trace, contract.TraceEntry{ID: c.mem.ID, Scope: c.mem.Scope, Score: c.score, Parts: c.parts, Kept: keep, Dropped: why})
		}
		if !keep {
			continue
		}
		used += len(text)
		if c.mem.Scope == contract.ScopeUser {
			usedUser += len(text)
		}
		parts := c.parts
		item := contract.RecallItem{
			ID: c.mem.ID, Kind: contract.KindMemory, Scope: c.mem.Scope, Category: c.mem.Category, Score: c.score,
			Parts: &parts, Text: text, Sources: c.mem.SourceIDs(), CreatedAt: c.mem.CreatedAt, EventTime: c.mem.EventTime,
		}
		resp.Items = append(resp.Items, item)
		lines = append(lines, blockLine(item))
	}
	if len(lines) > 0 {
		resp.Block = "<relevant-memories>\n" + strings.Join(lines, "\n") + "\n</relevant-memories>"
	}
	return resp, nil
}

func blockLine(it contract.RecallItem) string {
	prefix := "- [" + it.Category + "] "
	if it.EventTime != nil {
		prefix += "(" + it.EventTime.Format("2006-01-02") + ") "
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

// overlap is the share of the query's terms the text contains.
func overlap(q map[string]bool, text string) float64 {
	if len(q) == 0 {
		return 0
	}
	n := 0
	for t := range termSet(text) {
		if q[t] {
			n++
		}
	}
	return float64(n) / float64(len(q))
}
