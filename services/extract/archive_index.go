package extract

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/memory"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/vector"
)

// maxArchivePointChars bounds the text one archived message contributes to the index (a long
// tool output is found by its beginning; recall shows the message from SQL anyway).
const maxArchivePointChars = 8000

// indexArchiveMessages writes one vector point per archived message of a (recall's `archive`
// target, docs/design.md §6): kind and scope "archive", the id memory.ArchiveMessageID, the text
// "Name: content". Point ids are deterministic, so a replay overwrites what it wrote. The
// payload names the message (session, message id, seq, archive) so recall can check it
// against SQL, which stays the truth: an erased session's points are never answered.
func (s *Service) indexArchiveMessages(ctx context.Context, a store.Archive) error {
	msgs, err := s.d.Store.MessagesBySeq(ctx, a.AccountID, a.SessionID, a.FromSeq, a.ToSeq)
	if err != nil {
		return fmt.Errorf("archive messages: %w", err)
	}
	pts := ArchivePoints(a, msgs)
	if len(pts) == 0 {
		return nil
	}
	texts := make([]string, len(pts))
	for i, p := range pts {
		texts[i] = p.Text
	}
	vecs, err := s.d.Embedder.Embed(ctx, texts)
	if err != nil {
		return fmt.Errorf("embed archive messages: %w", err)
	}
	for i := range pts {
		pts[i].Vector = vecs[i]
	}
	if err := s.d.Vectors.Upsert(ctx, s.d.Embedder.Model(), pts); err != nil {
		return fmt.Errorf("upsert archive vectors: %w", err)
	}
	return nil
}

// ArchivePoints are the index points (without vectors) of an archive's messages: those of
// msgs that belong to a and have text.
func ArchivePoints(a store.Archive, msgs []store.Message) []vector.Point {
	pts := make([]vector.Point, 0, len(msgs))
	for _, m := range msgs {
		if m.ArchiveID != a.ID || strings.TrimSpace(m.Content) == "" || m.Role == contract.RoleSystem {
			continue
		}
		text := memory.ArchiveMessageText(m.Role, m.Name, m.Content)
		if len(text) > maxArchivePointChars {
			text = strings.ToValidUTF8(text[:maxArchivePointChars], "")
		}
		pts = append(pts, vector.Point{
			ID: memory.ArchiveMessageID(a.AccountID, a.SessionID, m.MessageID), AccountID: a.AccountID, UserID: a.UserID, AgentID: a.AgentID,
			Scope: contract.ScopeArchive, Kind: contract.KindArchive, Category: m.Role, Text: text, CreatedAt: m.CreatedAt,
			Payload: map[string]string{"session_id": a.SessionID, "message_id": m.MessageID, "archive_id": a.ID, "seq": strconv.FormatInt(m.Seq, 10)},
		})
	}
	return pts
}
