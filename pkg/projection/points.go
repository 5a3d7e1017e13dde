// Package projection owns the vector index as a projection of SQL: SQL holds the truth
// (memory rows with their embeddings, archived messages), and the index is derived from it.
// It is the one place that turns a memory row or an archived message into a vector point
// (MemoryPoint, ArchivePoints), indexes a finished archive (IndexArchive), rebuilds a local
// index from SQL (Reconcile), and keeps a local index current from the event stream
// (Follower) — so every recall replica answers from the same data, whatever the index mode
// (docs/architecture.md "One index every replica sees").
package projection

import (
	"strconv"
	"strings"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/memory"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/vector"
)

// MaxArchivePointChars bounds the text one archived message contributes to the index (a long
// tool output is found by its beginning; recall shows the message from SQL anyway).
const MaxArchivePointChars = 8000

// MemoryPoint is the index point of a memory row: kind memory, or digest for the digests the
// summarizer writes as memory rows (their payload names the period and bucket). The vector is
// the row's stored embedding (nil when it has none).
func MemoryPoint(m store.Memory) vector.Point {
	p := vector.Point{
		ID: m.ID, AccountID: m.AccountID, UserID: m.UserID, AgentID: m.AgentID, Scope: m.Scope,
		Kind: contract.KindMemory, Category: m.Category, Text: m.Text, Vector: m.Embedding, CreatedAt: m.CreatedAt,
	}
	if m.Category == memory.Digest {
		p.Kind = contract.KindDigest
		if period, bucket, ok := strings.Cut(m.Value, " "); ok {
			p.Payload = map[string]string{"period": period, "bucket": bucket}
		}
		if m.EventTime != nil {
			p.CreatedAt = *m.EventTime
		}
	}
	return p
}

// ArchivePoints are the index points (without vectors) of an archive's messages: one per
// message of msgs that belongs to a and has text (system messages excepted), kind and scope
// "archive", the id memory.ArchiveMessageID, the text "Role/name: content" (indexing adds the
// previous turn's on a second line: withPreviousTurn). The payload names
// the message (session, message id, seq, archive) so recall can check it against SQL, and its
// speaker (the name, else the role) for the session context (ContextPoints).
func ArchivePoints(a store.Archive, msgs []store.Message) []vector.Point {
	pts := make([]vector.Point, 0, len(msgs))
	for _, m := range msgs {
		if m.ArchiveID != a.ID || strings.TrimSpace(m.Content) == "" || m.Role == contract.RoleSystem {
			continue
		}
		pts = append(pts, archivePoint(a.AccountID, a.UserID, a.AgentID, a.SessionID, a.ID, m))
	}
	return pts
}

func archivePoint(account, user, agent, session, archive string, m store.Message) vector.Point {
	text := memory.ArchiveMessageText(m.Role, m.Name, m.Content)
	if len(text) > MaxArchivePointChars {
		text = strings.ToValidUTF8(text[:MaxArchivePointChars], "")
	}
	return vector.Point{
		ID: memory.ArchiveMessageID(account, session, m.MessageID), AccountID: account, UserID: user, AgentID: agent,
		Scope: contract.ScopeArchive, Kind: contract.KindArchive, Category: m.Role, Text: text, CreatedAt: m.CreatedAt,
		Payload: map[string]string{"session_id": session, "message_id": m.MessageID, "archive_id": archive, "seq": strconv.FormatInt(m.Seq, 10),
			"speaker": memory.Speaker(m.Role, m.Name)},
	}
}

// previousTurnChars bounds the earlier message an archive point's keyword text carries.
const previousTurnChars = 300

// withPreviousTurn appends to each archive point's text, on a second line, the text of the
// point before it in the same archive (cut to previousTurnChars, spaces collapsed): the
// message it most often answers. "Caroline: A sunset." is about the painting the turn before
// asked after, and the question names the painting. Only the keyword side (BM25, and recall's
// lexical overlap before the message is read from SQL) sees it: the points are embedded from
// their own text first (embedArchivePoints); embedding the earlier turn too measured no
// better on LoCoMo, and the turn after neither way (docs/recall-quality.md). pts are in
// history order (created_at, position), as ArchivePoints returns store.ArchiveMessages' and
// Reconcile reads them: not seq order, which can differ from the order the turns were said.
func withPreviousTurn(pts []vector.Point) {
	prev := ""
	for i := range pts {
		own := pts[i].Text
		if i > 0 && sameArchive(pts[i-1], pts[i]) {
			pts[i].Text = own + "\n" + prev
		}
		prev = strings.Join(strings.Fields(own), " ")
		if len(prev) > previousTurnChars {
			prev = strings.ToValidUTF8(prev[:previousTurnChars], "")
		}
	}
}

func sameArchive(a, b vector.Point) bool {
	return a.AccountID == b.AccountID && a.Payload["session_id"] == b.Payload["session_id"] && a.Payload["archive_id"] == b.Payload["archive_id"]
}
