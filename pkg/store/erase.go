package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Erased is what an erasure removed from SQL, with the ids the other stores (vector index,
// hot cache, JetStream) need, collected before the rows went.
type Erased struct {
	Sessions     []string            // session ids erased
	MessageIDs   map[string][]string // per session: the erased messages (archive points, dedup keys)
	MemoryIDs    []string            // memories deleted (their vector points)
	Messages     int64
	Archives     int64
	MemoriesKept int64 // memories that lost the session's sources but keep others
	Summaries    int64
}

// WriteTombstone records that a user (session "") or one session of a user is erased (docs/design.md §5
// "Erasure"), before anything is deleted, so that commits, outbox rows and replays in flight
// are dropped under the session lock from now on. A session that exists and belongs to another
// user, or a session that neither exists nor was erased before by this user, is ErrNotFound
// (existence does not leak); writing a tombstone twice is harmless.
func (s *Store) WriteTombstone(ctx context.Context, account, user, session string) error {
	if account == "" || user == "" {
		return fmt.Errorf("tombstone: account and user are required")
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if session != "" {
			sess, err := s.getSession(ctx, tx, account, session, true)
			switch {
			case errors.Is(err, ErrNotFound):
				var n int
				if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM tombstones WHERE account_id = ? AND user_id = ? AND session_id = ?",
					account, user, session).Scan(&n); err != nil {
					return err
				}
				if n == 0 {
					return ErrNotFound
				}
			case err != nil:
				return err
			case sess.UserID != user:
				return ErrNotFound
			}
		}
		_, err := tx.ExecContext(ctx, s.insertIgnore()+" tombstones (account_id, user_id, session_id, created_us) VALUES (?, ?, ?, ?)",
			account, user, session, s.nowUS())
		return err
	})
}

// Tombstoned reports whether the user, or the session of the user, is erased.
func (s *Store) Tombstoned(ctx context.Context, account, user, session string) (bool, error) {
	return s.tombstonedTx(ctx, s.db, account, user, session)
}

// EraseData deletes, in one transaction, everything SQL holds of a user (session "") or of
// one session of a user: messages, archives, commit results, outbox rows on the subjects
// outboxSubjects names for each session, the session rows, summaries (digests) and memories —
// for a session, only that session's sources leave a memory, and a memory with none left is
// deleted. The session rows are locked first (sorted), so a commit holding one finishes before
// the deletes and is then removed with the rest; every later commit sees the tombstone.
// WriteTombstone must have run first.
func (s *Store) EraseData(ctx context.Context, account, user, session string, outboxSubjects func(session string) []string) (Erased, error) {
	var out Erased
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		out = Erased{MessageIDs: map[string][]string{}}
		sessions := []string{session}
		if session == "" {
			var err error
			if sessions, err = s.userSessions(ctx, tx, account, user); err != nil {
				return err
			}
		}
		sort.Strings(sessions)
		for _, id := range sessions {
			sess, err := s.getSession(ctx, tx, account, id, true)
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			if sess.UserID != user {
				return fmt.Errorf("erase session %s: it belongs to another user: %w", id, ErrNotFound)
			}
		}
		out.Sessions = sessions
		for _, id := range sessions {
			if err := s.eraseSessionRows(ctx, tx, account, id, outboxSubjects(id), &out); err != nil {
				return err
			}
		}
		var err error
		if session == "" {
			err = s.eraseUserMemories(ctx, tx, account, user, &out)
		} else {
			err = s.eraseSessionSources(ctx, tx, account, user, session, &out)
		}
		if err != nil {
			return err
		}
		// Digests summarise a period across sessions; they are derived data the scheduler
		// rebuilds from what remains, so an erasure drops all of the user's.
		res, err := tx.ExecContext(ctx, "DELETE FROM summaries WHERE account_id = ? AND user_id = ?", account, user)
		if err != nil {
			return err
		}
		out.Summaries, _ = res.RowsAffected()
		return nil
	})
	return out, err
}

// DropErasedSessionRows deletes the (empty) rows of erased sessions that a turn in flight
// re-created after EraseData (ingest skips a tombstoned session's messages but keeps its row).
func (s *Store) DropErasedSessionRows(ctx context.Context, account, user string, sessions []string) error {
	for _, id := range sessions {
		if _, err := s.db.ExecContext(ctx, "DELETE FROM sessions WHERE account_id = ? AND session_id = ? AND user_id = ? AND message_count = 0",
			account, id, user); err != nil {
			return err
		}
	}
	return nil
}

// Checkpoint makes an erasure final in SQLite's files (docs/operations.md "Erasure on disk"):
// it copies the WAL into the database and truncates the WAL to zero bytes, so the older page
// versions the WAL still held (the erased rows among them) are gone; secure_delete (OpenSQLite)
// has already zeroed the rows in the database's pages. A reader still on an older snapshot
// holds the checkpoint up: it waits for it (busy timeout) and retries for up to 30 s. On MySQL
// it does nothing: what the server keeps (undo logs, binlog) is the operator's to manage.
func (s *Store) Checkpoint(ctx context.Context) error {
	if s.dialect != SQLite {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for attempt := 1; ; attempt++ {
		// busy is 1 when readers or a writer kept the checkpoint from completing.
		var busy, walFrames, checkpointed int
		err := s.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &walFrames, &checkpointed)
		switch {
		case err == nil && busy == 0:
			return nil
		case err != nil && !IsRetryable(err):
			return fmt.Errorf("checkpoint the SQLite WAL: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("checkpoint the SQLite WAL: still busy after %d attempts: %w", attempt, ctx.Err())
		case <-time.After(time.Duration(min(attempt, 10)) * 20 * time.Millisecond):
		}
	}
}

func (s *Store) userSessions(ctx context.Context, tx *sql.Tx, account, user string) ([]string, error) {
	rows, err := tx.QueryContext(ctx, "SELECT session_id FROM sessions WHERE account_id = ? AND user_id = ?", account, user)
	if err != nil {
		return nil, err
	}
	return scanStrings(rows)
}

func (s *Store) eraseSessionRows(ctx context.Context, tx *sql.Tx, account, session string, subjects []string, out *Erased) error {
	rows, err := tx.QueryContext(ctx, "SELECT message_id FROM messages WHERE account_id = ? AND session_id = ?", account, session)
	if err != nil {
		return err
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		ids = append(ids, id)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	out.MessageIDs[session] = ids
	res, err := tx.ExecContext(ctx, "DELETE FROM messages WHERE account_id = ? AND session_id = ?", account, session)
	if err != nil {
		return err
	}
	n, _ := res.RowsAffected()
	out.Messages += n
	if res, err = tx.ExecContext(ctx, "DELETE FROM archives WHERE account_id = ? AND session_id = ?", account, session); err != nil {
		return err
	}
	n, _ = res.RowsAffected()
	out.Archives += n
	for _, q := range []string{
		"DELETE FROM commit_results WHERE account_id = ? AND session_id = ?",
		"DELETE FROM sessions WHERE account_id = ? AND session_id = ?",
	} {
		if _, err := tx.ExecContext(ctx, q, account, session); err != nil {
			return err
		}
	}
	if len(subjects) > 0 {
		args := make([]any, len(subjects))
		for i, sub := range subjects {
			args[i] = sub
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM outbox WHERE subject IN (?"+strings.Repeat(",?", len(subjects)-1)+")", args...); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) eraseUserMemories(ctx context.Context, tx *sql.Tx, account, user string, out *Erased) error {
	rows, err := tx.QueryContext(ctx, "SELECT id FROM memories WHERE account_id = ? AND user_id = ?", account, user)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		out.MemoryIDs = append(out.MemoryIDs, id)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM memory_sources WHERE account_id = ? AND memory_id IN (SELECT id FROM memories WHERE account_id = ? AND user_id = ?)",
		account, account, user); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, "DELETE FROM memories WHERE account_id = ? AND user_id = ?", account, user)
	return err
}

// eraseSessionSources removes one session's sources from the user's memories; a memory left
// without sources is deleted, and so are the user's digest memories (derived across sessions).
func (s *Store) eraseSessionSources(ctx context.Context, tx *sql.Tx, account, user, session string, out *Erased) error {
	rows, err := tx.QueryContext(ctx, `SELECT m.id, m.sources, m.category FROM memories m WHERE m.account_id = ? AND m.user_id = ? AND (m.category = 'digest' OR m.id IN (
		SELECT ms.memory_id FROM memory_sources ms WHERE ms.account_id = ? AND ms.session_id = ?))`+s.forUpdate(), account, user, account, session)
	if err != nil {
		return err
	}
	type row struct{ id, sources, category string }
	var found []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.sources, &r.category); err != nil {
			rows.Close()
			return err
		}
		found = append(found, r)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	now := s.nowUS()
	for _, r := range found {
		var srcs, kept []Source
		_ = json.Unmarshal([]byte(r.sources), &srcs)
		for _, src := range srcs {
			if src.SessionID != session {
				kept = append(kept, src)
			}
		}
		if len(kept) == 0 || r.category == "digest" {
			if _, err := tx.ExecContext(ctx, "DELETE FROM memories WHERE id = ? AND account_id = ?", r.id, account); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, "DELETE FROM memory_sources WHERE memory_id = ? AND account_id = ?", r.id, account); err != nil {
				return err
			}
			out.MemoryIDs = append(out.MemoryIDs, r.id)
			continue
		}
		b, _ := json.Marshal(kept)
		if _, err := tx.ExecContext(ctx, "UPDATE memories SET sources = ?, updated_us = ? WHERE id = ? AND account_id = ?", string(b), now, r.id, account); err != nil {
			return err
		}
		out.MemoriesKept++
	}
	_, err = tx.ExecContext(ctx, "DELETE FROM memory_sources WHERE account_id = ? AND session_id = ?", account, session)
	return err
}
