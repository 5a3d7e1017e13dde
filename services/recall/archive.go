package recall

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/memory"
	"github.com/membus/membus/pkg/projection"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/vector"
)

// Archive tools (docs/design.md §6 "Tools").
const (
	archiveSearchLimit    = 20
	archiveSearchMaxLimit = 200
	archiveLineChars      = 300
	archiveContextChars   = 200
)

// errNotArchived: an archive point whose message SQL no longer holds as archived (the session
// was erased, or the point is stale).
var errNotArchived = fmt.Errorf("%w: message not archived", store.ErrNotFound)

// resolveArchive loads an archive candidate's message from SQL (the truth: an erased session's
// points never come back) and sets its text: "Name: content", then up to ArchiveContext
// earlier messages of the session as context lines (shown, never sources).
func (s *Service) resolveArchive(ctx context.Context, account string, c *candidate) error {
	r := c.msg
	msgs, err := s.d.Store.MessagesBySeq(ctx, account, r.session, max(1, r.seq-int64(s.cfg.ArchiveContext)), r.seq)
	if err != nil {
		return err
	}
	if len(msgs) == 0 {
		return errNotArchived
	}
	m := msgs[len(msgs)-1]
	if m.Seq != r.seq || m.MessageID != r.messageID || m.ArchiveID != r.archiveID {
		return errNotArchived
	}
	text := memory.ArchiveMessageText(m.Role, m.Name, m.Content)
	for i := len(msgs) - 2; i >= 0; i-- {
		p := msgs[i]
		if p.ArchiveID == "" || strings.TrimSpace(p.Content) == "" {
			continue
		}
		line := strings.Join(strings.Fields(memory.ArchiveMessageText(p.Role, p.Name, p.Content)), " ")
		text += "\n(after " + cutText(line, archiveContextChars) + ")"
	}
	c.text = text
	c.createdAt = m.CreatedAt
	return nil
}

// keywordFallback answers from SQL alone when the vector store is down: BM25 (k1 1.2, b 0.75)
// over the user's newest FallbackMemories active memories of the requested scopes, within the
// search timeout. Archive messages are not searched this way (archive.search still works).
func (s *Service) keywordFallback(ctx context.Context, account string, req contract.RecallRequest, scopes []string, query string) ([]vector.Hit, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.SearchTimeout)
	defer cancel()
	want := uniqueScopes(scopes)
	if !containsString(want, contract.ScopeUser) && !containsString(want, contract.ScopeAgent) {
		return nil, nil
	}
	ms, err := s.d.Store.Memories(ctx, store.MemoryFilter{AccountID: account, UserID: req.UserID, AgentID: req.AgentID, ActiveOnly: true, Limit: s.cfg.FallbackMemories})
	if err != nil {
		return nil, err
	}
	var docs []store.Memory
	for _, m := range ms {
		if containsString(want, m.Scope) {
			docs = append(docs, m)
		}
	}
	scores := bm25(vector.Terms(query), len(docs), func(i int) []string { return vector.Terms(docs[i].Text) })
	var hits []vector.Hit
	for i, sc := range scores {
		if sc <= 0 {
			continue
		}
		p := projection.MemoryPoint(docs[i])
		p.Vector = nil // the keyword side only
		hits = append(hits, vector.Hit{ID: p.ID, Keyword: sc, Point: p})
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].Keyword > hits[j].Keyword })
	return hits[:min(len(hits), s.cfg.CandidatesPerSide)], nil
}

// bm25 scores n documents against the query terms (k1 1.2, b 0.75,
// idf = ln(1 + (N − df + 0.5)/(df + 0.5))).
func bm25(query []string, n int, doc func(i int) []string) []float64 {
	const k1, b = 1.2, 0.75
	tf := make([]map[string]int, n)
	df := map[string]int{}
	total := 0
	for i := 0; i < n; i++ {
		tf[i] = map[string]int{}
		ts := doc(i)
		total += len(ts)
		for _, t := range ts {
			if tf[i][t] == 0 {
				df[t]++
			}
			tf[i][t]++
		}
	}
	scores := make([]float64, n)
	if n == 0 {
		return scores
	}
	avg := max(1, float64(total)/float64(n))
	q := map[string]bool{}
	for _, t := range query {
		q[t] = true
	}
	for i := 0; i < n; i++ {
		dl := 0
		for _, c := range tf[i] {
			dl += c
		}
		for t := range q {
			f := float64(tf[i][t])
			if f == 0 {
				continue
			}
			idf := math.Log(1 + (float64(n)-float64(df[t])+0.5)/(float64(df[t])+0.5))
			scores[i] += idf * f * (k1 + 1) / (f + k1*(1-b+b*float64(dl)/avg))
		}
	}
	return scores
}

// ownSession loads a session of the user; another user's session is not found.
func (s *Service) ownSession(ctx context.Context, account, user, session string) error {
	sess, err := s.d.Store.GetSession(ctx, account, session)
	if err != nil {
		return err
	}
	if sess.UserID != user {
		return store.ErrNotFound
	}
	return nil
}

// ArchiveSearch answers archive.search: a case-insensitive keyword search over one session's
// archived messages. A message matches when it contains the query, or every word of it; the
// answer names each archive with its matching messages and, of each, the lines that match.
func (s *Service) ArchiveSearch(ctx context.Context, account string, req contract.ArchiveSearchRequest) (contract.ArchiveSearchResponse, error) {
	resp := contract.ArchiveSearchResponse{V: contract.Version, SessionID: req.SessionID, Query: req.Query, Archives: []contract.ArchiveMatch{}}
	query := strings.ToLower(strings.TrimSpace(req.Query))
	if req.UserID == "" || req.SessionID == "" || query == "" {
		return resp, fmt.Errorf("%w: user_id, session_id and query are required", errBadRequest)
	}
	limit := req.Limit
	if limit <= 0 {
		limit = archiveSearchLimit
	}
	limit = min(limit, archiveSearchMaxLimit)
	if err := s.ownSession(ctx, account, req.UserID, req.SessionID); err != nil {
		return resp, err
	}
	archives, err := s.d.Store.Archives(ctx, account, req.SessionID)
	if err != nil {
		return resp, err
	}
	words := strings.Fields(query)
	matches := func(text string) bool {
		text = strings.ToLower(text)
		if strings.Contains(text, query) {
			return true
		}
		for _, w := range words {
			if !strings.Contains(text, w) {
				return false
			}
		}
		return true
	}
	found := 0
	for _, a := range archives {
		msgs, err := s.d.Store.ArchiveMessages(ctx, a)
		if err != nil {
			return resp, err
		}
		am := contract.ArchiveMatch{ArchiveID: a.ID, FromSeq: a.FromSeq, ToSeq: a.ToSeq, Abstract: a.Abstract, Matches: []contract.ArchiveLine{}}
		for _, m := range msgs {
			if m.ArchiveID != a.ID || !matches(m.Name+": "+m.Content) {
				continue
			}
			if found == limit {
				resp.Truncated = true
				break
			}
			found++
			am.Matches = append(am.Matches, contract.ArchiveLine{Seq: m.Seq, MessageID: m.MessageID, Role: m.Role, Name: m.Name,
				Lines: matchingLines(m.Content, query, words)})
		}
		if len(am.Matches) > 0 {
			resp.Archives = append(resp.Archives, am)
		}
		if resp.Truncated {
			break
		}
	}
	return resp, nil
}

// matchingLines returns the lines of content that contain the query or one of its words (each
// cut to archiveLineChars), or the message's first line when the match spans lines.
func matchingLines(content, query string, words []string) []string {
	var out []string
	lines := strings.Split(content, "\n")
	for _, l := range lines {
		low := strings.ToLower(l)
		hit := strings.Contains(low, query)
		for _, w := range words {
			hit = hit || strings.Contains(low, w)
		}
		if hit && strings.TrimSpace(l) != "" {
			out = append(out, cutText(strings.TrimSpace(l), archiveLineChars))
		}
	}
	if len(out) == 0 {
		out = append(out, cutText(strings.TrimSpace(lines[0]), archiveLineChars))
	}
	return out
}

// ArchiveExpand answers archive.expand: one archive of the user with its messages. A foreign
// or missing archive is not found.
func (s *Service) ArchiveExpand(ctx context.Context, account string, req contract.ArchiveExpandRequest) (contract.ArchiveExpandResponse, error) {
	resp := contract.ArchiveExpandResponse{V: contract.Version, ArchiveID: req.ArchiveID, Messages: []contract.ArchiveMessage{}}
	if req.UserID == "" || req.ArchiveID == "" {
		return resp, fmt.Errorf("%w: user_id and archive_id are required", errBadRequest)
	}
	a, err := s.d.Store.GetArchive(ctx, account, req.ArchiveID)
	if err != nil {
		return resp, err
	}
	if a.UserID != req.UserID {
		return resp, store.ErrNotFound
	}
	if err := s.ownSession(ctx, account, req.UserID, a.SessionID); err != nil {
		return resp, err
	}
	msgs, err := s.d.Store.ArchiveMessages(ctx, a)
	if err != nil {
		return resp, err
	}
	resp.SessionID, resp.FromSeq, resp.ToSeq, resp.Abstract = a.SessionID, a.FromSeq, a.ToSeq, a.Abstract
	for _, m := range msgs {
		if m.ArchiveID != a.ID {
			continue
		}
		resp.Messages = append(resp.Messages, contract.ArchiveMessage{Seq: m.Seq, MessageID: m.MessageID, Role: m.Role, Name: m.Name,
			Content: m.Content, CreatedAt: m.CreatedAt})
	}
	return resp, nil
}
