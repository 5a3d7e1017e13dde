package projection

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/vector"
)

// Reconcile rebuilds a local index from SQL when their contents disagree: the active memories
// with a stored embedding of the index's model, plus one archive point per archived message of
// every indexed archive (recall's raw-history target) and their session-context points. Archived messages keep no embedding in
// SQL: their ids are derived from SQL to compare, and they are re-embedded only when a rebuild
// is needed. Messages whose session was erased are gone from SQL, so they never come back.
func Reconcile(ctx context.Context, d Deps, v *vector.Local, log *slog.Logger) error {
	// The ids alone decide whether the index agrees with SQL; the embeddings are read only to
	// rebuild it (all of them at once would be the whole index again, on the heap, at every start).
	memIDs, err := d.Store.EmbeddedIDs(ctx, d.Embedder.Model())
	if err != nil {
		return fmt.Errorf("read embedded memory ids from SQL: %w", err)
	}
	// Each archive's messages together, in history order (store.ArchiveMessages' order, which
	// IndexArchive gives withPreviousTurn): a rebuild writes the keyword text indexing wrote.
	const archived = `SELECT m.account_id, m.session_id, m.message_id, m.seq, m.role, m.name, m.content, m.created_us, a.id, a.user_id, a.agent_id
		FROM messages m JOIN archives a ON a.account_id = m.account_id AND a.id = m.archive_id
		WHERE a.state IN ('indexed', 'summarized') AND m.role <> 'system'
		ORDER BY m.account_id, m.session_id, m.archive_id, m.created_us, m.position, m.seq`
	rows, err := d.Store.DB().QueryContext(ctx, archived)
	if err != nil {
		return fmt.Errorf("read archived messages from SQL: %w", err)
	}
	var msgs []vector.Point
	for rows.Next() {
		var account, session, role, name, archive, user, agent string
		var m store.Message
		var created int64
		if err := rows.Scan(&account, &session, &m.MessageID, &m.Seq, &role, &name, &m.Content, &created, &archive, &user, &agent); err != nil {
			rows.Close()
			return fmt.Errorf("read archived messages from SQL: %w", err)
		}
		if strings.TrimSpace(m.Content) == "" {
			continue
		}
		m.Role, m.Name, m.CreatedAt = role, name, time.UnixMicro(created).UTC()
		msgs = append(msgs, archivePoint(account, user, agent, session, archive, m))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read archived messages from SQL: %w", err)
	}
	ids := make([]string, 0, len(memIDs)+len(msgs))
	ids = append(ids, memIDs...)
	for _, p := range msgs {
		ids = append(ids, p.ID)
	}
	for _, p := range ContextPoints(msgs) {
		ids = append(ids, p.ID)
	}
	n, sum, err := v.Digest(ctx, "")
	if err != nil {
		return err
	}
	if n == len(ids) && sum == vector.DigestIDs(ids) && len(v.Problems()) == 0 {
		return nil
	}
	var pts []vector.Point
	err = d.Store.EachEmbedding(ctx, d.Embedder.Model(), func(m store.Memory) error {
		pts = append(pts, MemoryPoint(m))
		return nil
	})
	if err != nil {
		return fmt.Errorf("read embeddings from SQL: %w", err)
	}
	log.Info("rebuilding the local vector index from SQL", "memories", len(pts), "archive_messages", len(msgs))
	if err := embedArchivePoints(ctx, d.Embedder, msgs); err != nil {
		return fmt.Errorf("re-embed archived messages: %w", err)
	}
	pts = append(pts, msgs...)
	return v.Rebuild(ctx, append(pts, ContextPoints(msgs)...))
}
