package recall

import (
	"context"
	"fmt"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/tokens"
)

// systemPromptAddition tells the model to look in the archive before saying "not mentioned".
const systemPromptAddition = "Earlier parts of this conversation were archived. The [Session History Summary] and the archive index above summarise them. " +
	"Before answering that something was not mentioned, search the archive (archive_search) or expand an archive (archive_expand)."

// Context assembles what fits the host's token budget (docs/design.md §6 "Context assembly"):
// reserved = max(15%, 20000 when budget ≥ 40000); archive = min(15% of the rest, 8000); the
// session gets the remainder: the overview, the archive index, then the newest active messages.
func (s *Service) Context(ctx context.Context, account string, req contract.ContextRequest) (contract.ContextResponse, error) {
	resp := contract.ContextResponse{V: contract.Version, Messages: []contract.ContextMessage{}, ArchiveIndex: []contract.ArchiveIndexEntry{}}
	if req.SessionID == "" || req.UserID == "" {
		return resp, fmt.Errorf("%w: session_id and user_id are required", errBadRequest)
	}
	if req.TokenBudget <= 0 {
		return resp, fmt.Errorf("%w: token_budget must be positive", errBadRequest)
	}
	sess, err := s.d.Store.GetSession(ctx, account, req.SessionID)
	if err != nil {
		return resp, err
	}
	if sess.UserID != req.UserID {
		return resp, store.ErrNotFound // another user's session: existence does not leak
	}
	budget := req.TokenBudget
	reserved := budget * 15 / 100
	if budget >= 40000 {
		reserved = max(reserved, 20000)
	}
	rest := budget - reserved
	archiveBudget := min(rest*15/100, 8000)
	sessionBudget := rest - archiveBudget
	used := 0

	if sess.Overview != "" {
		summary := "[Session History Summary]\n" + sess.Overview
		if t := tokens.Count(summary); t <= sessionBudget {
			resp.Summary = summary
			sessionBudget -= t
			used += t
		}
	}
	archives, err := s.d.Store.Archives(ctx, account, req.SessionID)
	if err != nil {
		return resp, err
	}
	archiveUsed := 0
	for i := len(archives) - 1; i >= 0; i-- { // newest archives first
		a := archives[i]
		abs := a.Abstract
		if abs == "" {
			abs = fmt.Sprintf("messages %d–%d", a.FromSeq, a.ToSeq)
		}
		t := tokens.Count(a.ID) + tokens.Count(abs) + 4
		if archiveUsed+t > archiveBudget {
			break
		}
		archiveUsed += t
		resp.ArchiveIndex = append([]contract.ArchiveIndexEntry{{ArchiveID: a.ID, FromSeq: a.FromSeq, ToSeq: a.ToSeq, Abstract: abs}}, resp.ArchiveIndex...)
	}
	used += archiveUsed

	// The newest active messages that fit (each counted with session.MessageOverhead), read
	// through the session store: the Redis hot cache first when there is one.
	picked, winUsed, err := s.d.Sessions.Window(ctx, account, req.SessionID, sessionBudget, 0)
	if err != nil {
		return resp, err
	}
	used += winUsed
	msgs := make([]contract.ContextMessage, 0, len(picked))
	for _, m := range picked {
		msgs = append(msgs, contract.ContextMessage{Role: m.Role, Content: m.Content, Name: m.Name, Seq: m.Seq})
	}
	resp.Messages = repair(msgs)
	if len(archives) > 0 {
		resp.SystemPromptAddition = systemPromptAddition
	}
	resp.EstimatedTokens = used
	return resp, nil
}

// repair keeps a transcript a model accepts: it starts with a user message, tool results
// follow an assistant turn, consecutive user messages are merged, and roles alternate.
func repair(in []contract.ContextMessage) []contract.ContextMessage {
	out := make([]contract.ContextMessage, 0, len(in))
	for _, m := range in {
		if len(out) == 0 && m.Role != contract.RoleUser {
			continue // a window may not open on an assistant reply or an orphan tool result
		}
		if m.Role == contract.RoleTool && len(out) > 0 && out[len(out)-1].Role == contract.RoleUser {
			continue // an orphan tool result whose call was cut off
		}
		if len(out) > 0 {
			last := &out[len(out)-1]
			if m.Role == last.Role && (m.Role == contract.RoleUser || m.Role == contract.RoleAssistant) {
				if m.Name != last.Name && m.Name != "" {
					last.Content += "\n" + m.Name + ": " + m.Content
				} else {
					last.Content += "\n" + m.Content
				}
				last.Seq = m.Seq
				continue
			}
		}
		out = append(out, m)
	}
	return out
}
