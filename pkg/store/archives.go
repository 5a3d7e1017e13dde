package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/membus/membus/pkg/contract"
)

// Archive states, in order (docs/design.md §5).
const (
	StateArchived   = "archived"
	StateExtracted  = "extracted"
	StateIndexed    = "indexed"
	StateSummarized = "summarized"
)

// Archive is one archived range of a session's messages.
type Archive struct {
	ID        string
	AccountID string
	SessionID string
	UserID    string
	AgentID   string
	FromSeq   int64
	ToSeq     int64
	Kind      string
	State     string
	RequestID string
	Tokens    int64
	Abstract  string
	Overview  string
	Memories  map[string]int
	CreatedAt time.Time
	UpdatedAt time.Time
}

// AcquireEpoch bumps the session's fencing epoch; the caller holds the session lock and
// passes the returned epoch to every state transition, so a holder whose lease expired
// cannot commit anything.
func (s *Store) AcquireEpoch(ctx context.Context, account, session string) (int64, error) {
	var epoch int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "UPDATE sessions SET epoch = epoch + 1 WHERE account_id = ? AND session_id = ?", account, session)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotFound
		}
		return tx.QueryRowContext(ctx, "SELECT epoch FROM sessions WHERE account_id = ? AND session_id = ?", account, session).Scan(&epoch)
	})
	return epoch, err
}

func (s *Store) checkEpoch(ctx context.Context, tx *sql.Tx, account, session string, epoch int64) (*Session, error) {
	sess, err := s.getSession(ctx, tx, account, session, true)
	if err != nil {
		return nil, err
	}
	if sess.Epoch != epoch {
		return nil, fmt.Errorf("%w (mine %d, now %d)", ErrFenced, epoch, sess.Epoch)
	}
	tomb, err := s.tombstonedTx(ctx, tx, account, sess.UserID, session)
	if err != nil {
		return nil, err
	}
	if tomb {
		return nil, ErrTombstoned
	}
	return sess, nil
}

// CreateArchive moves the messages of a's range into the archive (state archived), lowers the
// session's pending tokens, advances archived_upto and queues events, all in one transaction
// fenced by epoch. Creating an archive that exists already is a no-op that returns nil.
func (s *Store) CreateArchive(ctx context.Context, epoch int64, a Archive, events []OutboxEntry) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		sess, err := s.checkEpoch(ctx, tx, a.AccountID, a.SessionID, epoch)
		if err != nil {
			return err
		}
		var exists int
		if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM archives WHERE id = ?", a.ID).Scan(&exists); err != nil {
			return err
		}
		if exists > 0 {
			return nil
		}
		var tokens sql.NullInt64
		if err := tx.QueryRowContext(ctx, "SELECT SUM(tokens) FROM messages WHERE account_id = ? AND session_id = ? AND seq BETWEEN ? AND ? AND archive_id IS NULL",
			a.AccountID, a.SessionID, a.FromSeq, a.ToSeq).Scan(&tokens); err != nil {
			return err
		}
		now := s.nowUS()
		if _, err := tx.ExecContext(ctx, `INSERT INTO archives (id, account_id, session_id, user_id, agent_id, from_seq, to_seq, kind, state, request_id, tokens, created_us, updated_us)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			a.ID, a.AccountID, a.SessionID, a.UserID, a.AgentID, a.FromSeq, a.ToSeq, a.Kind, StateArchived, a.RequestID, tokens.Int64, now, now); err != nil {
			return fmt.Errorf("insert archive: %w", err)
		}
		if _, err := tx.ExecContext(ctx, "UPDATE messages SET archive_id = ? WHERE account_id = ? AND session_id = ? AND seq BETWEEN ? AND ? AND archive_id IS NULL",
			a.ID, a.AccountID, a.SessionID, a.FromSeq, a.ToSeq); err != nil {
			return err
		}
		pending := sess.PendingTokens - tokens.Int64
		if pending < 0 {
			pending = 0
		}
		upto := sess.ArchivedUpto
		if a.ToSeq > upto {
			upto = a.ToSeq
		}
		if _, err := tx.ExecContext(ctx, "UPDATE sessions SET archived_upto = ?, pending_tokens = ?, commit_count = commit_count + 1, updated_us = ? WHERE account_id = ? AND session_id = ?",
			upto, pending, now, a.AccountID, a.SessionID); err != nil {
			return err
		}
		return s.insertOutbox(ctx, tx, events)
	})
}

// AdvanceArchive moves an archive from one state to the next and queues events, fenced by
// epoch. Moving an archive that is already past `from` is a no-op.
func (s *Store) AdvanceArchive(ctx context.Context, epoch int64, a Archive, from, to string, events []OutboxEntry) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := s.checkEpoch(ctx, tx, a.AccountID, a.SessionID, epoch); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, "UPDATE archives SET state = ?, updated_us = ? WHERE id = ? AND account_id = ? AND state = ?",
			to, s.nowUS(), a.ID, a.AccountID, from)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		return s.insertOutbox(ctx, tx, events)
	})
}

// SetOverview records the session's cumulative overview after applying archive a (which
// becomes summarized), fenced by epoch. Archives are applied in seq order: one at or below
// summarized_upto is skipped.
func (s *Store) SetOverview(ctx context.Context, epoch int64, a Archive, abstract, overview string, events []OutboxEntry) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		sess, err := s.checkEpoch(ctx, tx, a.AccountID, a.SessionID, epoch)
		if err != nil {
			return err
		}
		if a.ToSeq <= sess.SummarizedUpto {
			return nil
		}
		now := s.nowUS()
		if _, err := tx.ExecContext(ctx, "UPDATE archives SET abstract = ?, overview = ?, state = CASE WHEN state = ? THEN ? ELSE state END, updated_us = ? WHERE id = ? AND account_id = ?",
			abstract, overview, StateIndexed, StateSummarized, now, a.ID, a.AccountID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE sessions SET overview = ?, summarized_upto = ?, updated_us = ? WHERE account_id = ? AND session_id = ?",
			overview, a.ToSeq, now, a.AccountID, a.SessionID); err != nil {
			return err
		}
		return s.insertOutbox(ctx, tx, events)
	})
}

const archiveCols = "id, account_id, session_id, user_id, agent_id, from_seq, to_seq, kind, state, request_id, tokens, abstract, overview, memories, created_us, updated_us"

func scanArchives(rows *sql.Rows) ([]Archive, error) {
	defer rows.Close()
	var out []Archive
	for rows.Next() {
		var a Archive
		var abs, ov, mem sql.NullString
		var c, u int64
		if err := rows.Scan(&a.ID, &a.AccountID, &a.SessionID, &a.UserID, &a.AgentID, &a.FromSeq, &a.ToSeq, &a.Kind, &a.State,
			&a.RequestID, &a.Tokens, &abs, &ov, &mem, &c, &u); err != nil {
			return nil, err
		}
		a.Abstract, a.Overview = abs.String, ov.String
		if mem.String != "" {
			_ = json.Unmarshal([]byte(mem.String), &a.Memories)
		}
		a.CreatedAt, a.UpdatedAt = time.UnixMicro(c), time.UnixMicro(u)
		out = append(out, a)
	}
	return out, rows.Err()
}

// Archives lists a session's archives in seq order.
func (s *Store) Archives(ctx context.Context, account, session string) ([]Archive, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+archiveCols+" FROM archives WHERE account_id = ? AND session_id = ? ORDER BY from_seq", account, session)
	if err != nil {
		return nil, err
	}
	return scanArchives(rows)
}

// GetArchive loads one archive of the account.
func (s *Store) GetArchive(ctx context.Context, account, id string) (Archive, error) {
	return s.oneArchive(ctx, "account_id = ? AND id = ?", account, id)
}

// oneArchive loads the first archive matching where, or ErrNotFound.
func (s *Store) oneArchive(ctx context.Context, where string, args ...any) (Archive, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+archiveCols+" FROM archives WHERE "+where+" LIMIT 1", args...)
	if err != nil {
		return Archive{}, err
	}
	as, err := scanArchives(rows)
	if err != nil {
		return Archive{}, err
	}
	if len(as) == 0 {
		return Archive{}, ErrNotFound
	}
	return as[0], nil
}

// ArchiveByRequest returns the archive a commit request created, or ErrNotFound.
func (s *Store) ArchiveByRequest(ctx context.Context, account, requestID string) (Archive, error) {
	return s.oneArchive(ctx, "account_id = ? AND request_id = ? ORDER BY from_seq DESC", account, requestID)
}

// SetArchiveMemories records the per-category memory counts of an archive's extraction.
func (s *Store) setArchiveMemories(ctx context.Context, tx *sql.Tx, archiveID string, counts map[string]int) error {
	b, _ := json.Marshal(counts)
	_, err := tx.ExecContext(ctx, "UPDATE archives SET memories = ? WHERE id = ?", string(b), archiveID)
	return err
}

// SaveCommitResult stores the result of a synchronous commit so a repeated request with the
// same id is answered with it.
func (s *Store) SaveCommitResult(ctx context.Context, requestID, account, session string, result []byte) error {
	_, err := s.db.ExecContext(ctx, s.insertIgnore()+" commit_results (request_id, account_id, session_id, result, created_us) VALUES (?, ?, ?, ?, ?)",
		requestID, account, session, string(result), s.nowUS())
	return err
}

// CommitResult returns a stored commit result, or ErrNotFound.
func (s *Store) CommitResult(ctx context.Context, account, requestID string) ([]byte, error) {
	var r string
	err := s.db.QueryRowContext(ctx, "SELECT result FROM commit_results WHERE request_id = ? AND account_id = ?", requestID, account).Scan(&r)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	return []byte(r), err
}

// ArchiveMemories returns the active memories sourced from an archive's messages.
func (s *Store) ArchiveMemories(ctx context.Context, a Archive) ([]Memory, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+prefixCols("m.", memoryCols)+` FROM memories m WHERE m.account_id = ? AND m.id IN (
		SELECT ms.memory_id FROM memory_sources ms JOIN messages msg
		  ON msg.account_id = ms.account_id AND msg.session_id = ms.session_id AND msg.message_id = ms.message_id
		WHERE ms.account_id = ? AND ms.session_id = ? AND msg.archive_id = ?)
		AND m.valid_to_us IS NULL AND m.superseded_by IS NULL AND m.duplicate_of IS NULL ORDER BY m.id`,
		a.AccountID, a.AccountID, a.SessionID, a.ID)
	if err != nil {
		return nil, err
	}
	return scanMemories(rows)
}

// SupersededBy returns the ids of memories superseded by any of ids (to drop from the index).
func (s *Store) SupersededBy(ctx context.Context, account string, ids []string) ([]Memory, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	q := "SELECT " + memoryCols + " FROM memories WHERE account_id = ? AND superseded_by IN (?" + strings.Repeat(",?", len(ids)-1) + ")"
	args := []any{account}
	for _, id := range ids {
		args = append(args, id)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return scanMemories(rows)
}

// RequestCommit queues a commit request for everything the session holds now (upto = its
// newest seq) through the outbox. It returns the request, or ErrNotFound when the session
// has no messages.
func (s *Store) RequestCommit(ctx context.Context, subject func(account, session string) string, req contract.CommitRequest) (contract.CommitRequest, error) {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		sess, err := s.getSession(ctx, tx, req.AccountID, req.SessionID, true)
		if err != nil {
			return err
		}
		req.Upto = sess.NextSeq - 1
		req.UserID = sess.UserID
		if req.AgentID == "" {
			req.AgentID = sess.AgentID
		}
		if req.Upto > sess.CommitRequestedUpto {
			if _, err := tx.ExecContext(ctx, "UPDATE sessions SET commit_requested_upto = ? WHERE account_id = ? AND session_id = ?", req.Upto, req.AccountID, req.SessionID); err != nil {
				return err
			}
		}
		if req.Kind != contract.CommitAuto && (req.KeepRecent == nil || *req.KeepRecent == 0) {
			// This commit archives everything: no idle commit is needed after it.
			if _, err := tx.ExecContext(ctx, "UPDATE sessions SET idle_since_us = 0 WHERE account_id = ? AND session_id = ?", req.AccountID, req.SessionID); err != nil {
				return err
			}
		}
		payload, err := json.Marshal(req)
		if err != nil {
			return err
		}
		return s.insertOutbox(ctx, tx, []OutboxEntry{{ID: req.RequestID, Subject: subject(req.AccountID, req.SessionID), Payload: payload}})
	})
	return req, err
}

func prefixCols(prefix, cols string) string {
	parts := strings.Split(cols, ",")
	for i, p := range parts {
		parts[i] = prefix + strings.TrimSpace(p)
	}
	return strings.Join(parts, ", ")
}
