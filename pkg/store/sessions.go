package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/membus/membus/pkg/stages"
)

// Session is a session row.
type Session struct {
	AccountID           string
	SessionID           string
	UserID              string
	AgentID             string
	SessionKey          string
	NextSeq             int64
	MessageCount        int64
	PendingTokens       int64
	CommitRequestedUpto int64
	ArchivedUpto        int64
	AppliedTurnsSeq     int64
	Epoch               int64
	CommitCount         int64
	CommitThreshold     *int
	KeepRecent          *int
	SummarizedUpto      int64
	// IdleSince is when the newest turn was stored while messages wait for an idle commit
	// (zero: none wait); see RequestIdleCommits.
	IdleSince time.Time
	Overview  string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Message is a stored message. Content is the capture text (tool calls rendered, injected
// blocks stripped, secrets redacted); Parts keeps the normalised parts as JSON.
type Message struct {
	AccountID string
	SessionID string
	Seq       int64
	MessageID string
	EventID   string
	Position  int
	Role      string
	Name      string
	Content   string
	Parts     json.RawMessage
	Tokens    int
	CreatedAt time.Time
	ArchiveID string
}

// Turn is one TurnEvent's messages, ready to store.
type Turn struct {
	AccountID  string
	UserID     string
	AgentID    string
	SessionID  string
	SessionKey string
	EventID    string
	StreamSeq  uint64
	// Threshold is the session's commit threshold to record (already clamped); 0 keeps the stored one.
	Threshold  int
	KeepRecent *int
	Messages   []Message
}

// ApplyResult says what one Turn did.
type ApplyResult struct {
	Stored     int
	Duplicates int
	Tombstoned bool
	// CommitUpto is the seq a commit was requested up to when this batch made the trigger
	// fire for the turn's session (reported on the session's last turn of the batch); 0: none.
	CommitUpto int64
}

// Pending is a session as a batch left it, inside ApplyTurns' transaction: what the commit
// trigger decides on.
type Pending struct {
	AccountID, SessionID, UserID, AgentID string
	// NewestSeq is the highest stored seq; CommitRequestedUpto the highest a commit was
	// already requested for.
	NewestSeq, CommitRequestedUpto int64
	// UnrequestedTokens are the tokens of the unarchived messages after CommitRequestedUpto.
	UnrequestedTokens int64
	// Threshold and KeepRecent are the session's own overrides (nil: the service's default).
	Threshold, KeepRecent *int
}

// Trigger is the commit decision ApplyTurns asks of each session a batch touched, inside the
// batch's transaction. It returns the outbox entries to write with the batch — none: no commit
// — and the session's new commit_requested_upto; an error fails the batch. A nil Trigger never
// commits.
type Trigger func(p Pending) (requestedUpto int64, entries []OutboxEntry, err error)

// Stages of ApplyTurns, timed into the stages.Timer its context carries (if any). They
// partition the call's time but for the sort of the batch.
const (
	// StageSQLBegin is BEGIN, with the wait for a pooled connection and for the write lock
	// (SQLite's BEGIN IMMEDIATE), and the pause before retrying a conflicting transaction.
	StageSQLBegin = "sql_begin"
	// StageSQLSessions is the session rows: the tombstone check, the insert-or-ignore and
	// locked read of each session the batch touches (MySQL row-lock waits included), and the
	// update that writes it back.
	StageSQLSessions = "sql_sessions"
	// StageSQLMessages is the message inserts, one statement per message; a duplicate is
	// dropped here by the unique key.
	StageSQLMessages = "sql_messages"
	// StageOutbox is the commit trigger of each session the batch touched: the sum of its
	// unrequested tokens, the decision and, when it fires, the outbox row.
	StageOutbox = "outbox"
	// StageSQLCommit is COMMIT (on a durable database, the fsync).
	StageSQLCommit = "sql_commit"
)

// ApplyTurns stores a batch of turns in one transaction: messages deduplicated on
// (account, session, message_id) by the unique key, seq assigned per session, pending tokens
// and the applied TURNS stream seq updated, and for each session the trigger's outbox entries
// (a commit request) written in the same transaction. Session rows are locked in sorted order
// so concurrent batches cannot deadlock on them.
func (s *Store) ApplyTurns(ctx context.Context, trigger Trigger, turns []Turn) ([]ApplyResult, error) {
	order := make([]int, len(turns))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		ta, tb := turns[order[a]], turns[order[b]]
		if ta.AccountID != tb.AccountID {
			return ta.AccountID < tb.AccountID
		}
		return ta.SessionID < tb.SessionID
	})
	var results []ApplyResult
	tm := stages.FromContext(ctx)
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		results = make([]ApplyResult, len(turns))
		var cur *Session
		var curTomb bool
		flush := func() error {
			if cur == nil || curTomb {
				return nil
			}
			return s.finishSession(ctx, tx, tm, trigger, cur, turns, order, results)
		}
		for _, i := range order {
			t := turns[i]
			if cur == nil || cur.AccountID != t.AccountID || cur.SessionID != t.SessionID {
				if err := flush(); err != nil {
					return err
				}
				start := time.Now()
				tomb, err := s.tombstonedTx(ctx, tx, t.AccountID, t.UserID, t.SessionID)
				if err != nil {
					return err
				}
				curTomb = tomb
				if tomb {
					// An erased session is not re-created, not even as an empty row.
					tm.Since(StageSQLSessions, start)
					cur = &Session{AccountID: t.AccountID, SessionID: t.SessionID}
					results[i].Tombstoned = true
					continue
				}
				cur, err = s.lockSession(ctx, tx, t)
				if err != nil {
					return err
				}
				tm.Since(StageSQLSessions, start)
			}
			if curTomb {
				results[i].Tombstoned = true
				continue
			}
			if t.Threshold > 0 {
				th := t.Threshold
				cur.CommitThreshold = &th
			}
			if t.KeepRecent != nil {
				cur.KeepRecent = t.KeepRecent
			}
			if t.StreamSeq > uint64(cur.AppliedTurnsSeq) {
				cur.AppliedTurnsSeq = int64(t.StreamSeq)
			}
			start := time.Now()
			for _, m := range t.Messages {
				res, err := tx.ExecContext(ctx, s.insertIgnore()+` messages
					(account_id, session_id, seq, message_id, event_id, position, role, name, content, parts, tokens, created_us)
					VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
					t.AccountID, t.SessionID, cur.NextSeq, m.MessageID, t.EventID, m.Position, m.Role, m.Name,
					m.Content, string(m.Parts), m.Tokens, m.CreatedAt.UnixMicro())
				if err != nil {
					return fmt.Errorf("insert message %s: %w", m.MessageID, err)
				}
				if n, _ := res.RowsAffected(); n == 0 {
					results[i].Duplicates++
					continue
				}
				results[i].Stored++
				cur.IdleSince = s.now()
				cur.NextSeq++
				cur.MessageCount++
				cur.PendingTokens += int64(m.Tokens)
			}
			tm.Since(StageSQLMessages, start)
		}
		return flush()
	})
	if err != nil {
		return nil, err
	}
	return results, nil
}

// finishSession asks the trigger about the session and writes the session row back.
func (s *Store) finishSession(ctx context.Context, tx *sql.Tx, tm *stages.Timer, trigger Trigger, cur *Session, turns []Turn, order []int, results []ApplyResult) error {
	start := time.Now()
	if trigger != nil && cur.NextSeq-1 > cur.CommitRequestedUpto {
		var unrequested sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT SUM(tokens) FROM messages WHERE account_id = ? AND session_id = ? AND seq > ? AND archive_id IS NULL`,
			cur.AccountID, cur.SessionID, cur.CommitRequestedUpto).Scan(&unrequested); err != nil {
			return err
		}
		upto, entries, err := trigger(Pending{AccountID: cur.AccountID, SessionID: cur.SessionID, UserID: cur.UserID, AgentID: cur.AgentID,
			NewestSeq: cur.NextSeq - 1, CommitRequestedUpto: cur.CommitRequestedUpto, UnrequestedTokens: unrequested.Int64,
			Threshold: cur.CommitThreshold, KeepRecent: cur.KeepRecent})
		if err != nil {
			return fmt.Errorf("commit trigger %s/%s: %w", cur.AccountID, cur.SessionID, err)
		}
		if len(entries) > 0 {
			if err := s.insertOutbox(ctx, tx, entries); err != nil {
				return err
			}
			cur.CommitRequestedUpto = upto
			// Report the request on the last turn of this session in the batch.
			for k := len(order) - 1; k >= 0; k-- {
				t := turns[order[k]]
				if t.AccountID == cur.AccountID && t.SessionID == cur.SessionID {
					results[order[k]].CommitUpto = upto
					break
				}
			}
		}
	}
	start = tm.Since(StageOutbox, start)
	_, err := tx.ExecContext(ctx, `UPDATE sessions SET next_seq = ?, message_count = ?, pending_tokens = ?,
		commit_requested_upto = ?, applied_turns_seq = ?, commit_threshold = ?, keep_recent = ?, idle_since_us = ?, updated_us = ?
		WHERE account_id = ? AND session_id = ?`,
		cur.NextSeq, cur.MessageCount, cur.PendingTokens, cur.CommitRequestedUpto, cur.AppliedTurnsSeq,
		nullInt(cur.CommitThreshold), nullInt(cur.KeepRecent), unixMicro(cur.IdleSince), s.nowUS(), cur.AccountID, cur.SessionID)
	tm.Since(StageSQLSessions, start)
	return err
}

func (s *Store) lockSession(ctx context.Context, tx *sql.Tx, t Turn) (*Session, error) {
	now := s.nowUS()
	if _, err := tx.ExecContext(ctx, s.insertIgnore()+` sessions (account_id, session_id, user_id, agent_id, session_key, created_us, updated_us)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, t.AccountID, t.SessionID, t.UserID, t.AgentID, t.SessionKey, now, now); err != nil {
		return nil, fmt.Errorf("create session: %w", err)
	}
	sess, err := s.getSession(ctx, tx, t.AccountID, t.SessionID, true)
	if err != nil {
		return nil, err
	}
	return sess, nil
}

const sessionCols = `account_id, session_id, user_id, agent_id, session_key, next_seq, message_count, pending_tokens,
	commit_requested_upto, archived_upto, applied_turns_seq, epoch, commit_count, commit_threshold, keep_recent,
	summarized_upto, idle_since_us, overview, created_us, updated_us`

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func (s *Store) getSession(ctx context.Context, q querier, account, session string, lock bool) (*Session, error) {
	query := "SELECT " + sessionCols + " FROM sessions WHERE account_id = ? AND session_id = ?"
	if lock {
		query += s.forUpdate()
	}
	var x Session
	var th, kr sql.NullInt64
	var ov sql.NullString
	var c, u, idle int64
	err := q.QueryRowContext(ctx, query, account, session).Scan(&x.AccountID, &x.SessionID, &x.UserID, &x.AgentID, &x.SessionKey,
		&x.NextSeq, &x.MessageCount, &x.PendingTokens, &x.CommitRequestedUpto, &x.ArchivedUpto, &x.AppliedTurnsSeq,
		&x.Epoch, &x.CommitCount, &th, &kr, &x.SummarizedUpto, &idle, &ov, &c, &u)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("load session %s: %w", session, err)
	}
	if th.Valid {
		v := int(th.Int64)
		x.CommitThreshold = &v
	}
	if kr.Valid {
		v := int(kr.Int64)
		x.KeepRecent = &v
	}
	x.Overview = ov.String
	if idle > 0 {
		x.IdleSince = time.UnixMicro(idle)
	}
	x.CreatedAt, x.UpdatedAt = time.UnixMicro(c), time.UnixMicro(u)
	return &x, nil
}

// GetSession loads a session; ErrNotFound when the account has no such session.
func (s *Store) GetSession(ctx context.Context, account, session string) (*Session, error) {
	return s.getSession(ctx, s.db, account, session, false)
}

// AppliedTurnsSeq is the highest TURNS stream sequence ingest applied to the session (0 when
// the session does not exist yet).
func (s *Store) AppliedTurnsSeq(ctx context.Context, account, session string) (uint64, error) {
	var v int64
	err := s.db.QueryRowContext(ctx, "SELECT applied_turns_seq FROM sessions WHERE account_id = ? AND session_id = ?", account, session).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return uint64(v), err
}

// PendingTokens are the tokens a commit would archive now: messages not yet archived, outside
// the newest keepRecent (docs/design.md §6 keeps them active after an automatic commit).
func (s *Store) PendingTokens(ctx context.Context, account, session string, keepRecent int) (int64, error) {
	var n sql.NullInt64
	err := s.db.QueryRowContext(ctx, `SELECT SUM(m.tokens) FROM messages m JOIN sessions s
		ON s.account_id = m.account_id AND s.session_id = m.session_id
		WHERE m.account_id = ? AND m.session_id = ? AND m.archive_id IS NULL AND m.seq < s.next_seq - ?`,
		account, session, keepRecent).Scan(&n)
	return n.Int64, err
}

const messageCols = "account_id, session_id, seq, message_id, event_id, position, role, name, content, parts, tokens, created_us, archive_id"

func scanMessages(rows *sql.Rows) ([]Message, error) {
	defer rows.Close()
	var out []Message
	for rows.Next() {
		var m Message
		var parts string
		var created int64
		var arch sql.NullString
		if err := rows.Scan(&m.AccountID, &m.SessionID, &m.Seq, &m.MessageID, &m.EventID, &m.Position, &m.Role, &m.Name,
			&m.Content, &parts, &m.Tokens, &created, &arch); err != nil {
			return nil, err
		}
		m.Parts = json.RawMessage(parts)
		m.CreatedAt = time.UnixMicro(created).UTC()
		m.ArchiveID = arch.String
		out = append(out, m)
	}
	return out, rows.Err()
}

// History returns a session's messages in (created_at, position) order, all of them or only
// the active (not archived) ones.
func (s *Store) History(ctx context.Context, account, session string, activeOnly bool) ([]Message, error) {
	q := "SELECT " + messageCols + " FROM messages WHERE account_id = ? AND session_id = ?"
	if activeOnly {
		q += " AND archive_id IS NULL"
	}
	rows, err := s.db.QueryContext(ctx, q+" ORDER BY created_us, position, seq", account, session)
	if err != nil {
		return nil, err
	}
	return scanMessages(rows)
}

// MessagesBySeq returns the messages with from ≤ seq ≤ to, in seq order.
func (s *Store) MessagesBySeq(ctx context.Context, account, session string, from, to int64) ([]Message, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+messageCols+" FROM messages WHERE account_id = ? AND session_id = ? AND seq BETWEEN ? AND ? ORDER BY seq",
		account, session, from, to)
	if err != nil {
		return nil, err
	}
	return scanMessages(rows)
}

func (s *Store) tombstonedTx(ctx context.Context, q querier, account, user, session string) (bool, error) {
	var n int
	err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM tombstones WHERE account_id = ? AND user_id = ? AND (session_id = '' OR session_id = ?)",
		account, user, session).Scan(&n)
	return n > 0, err
}

// unixMicro is t in microseconds, 0 for the zero time.
func unixMicro(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

func nullInt(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}
