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
	// Foreign: the turn names a session that belongs to another user of its account (a
	// session is one user's, docs/design.md §3); nothing of it is stored.
	Foreign bool
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
	// (on SQLite the process's write gate, wal.go, then BEGIN IMMEDIATE), and the pause before
	// retrying a conflicting transaction.
	StageSQLBegin = "sql_begin"
	// StageSQLSessions is the session rows: the batch's tombstone check, the locked read of
	// its sessions and the insert of the missing ones (MySQL row-lock waits included), and the
	// upsert that writes them back.
	StageSQLSessions = "sql_sessions"
	// StageSQLMessages is the multi-row insert of the batch's messages and, when the unique
	// key dropped one as a duplicate, the undo, the read of the stored ids and the insert
	// again without them.
	StageSQLMessages = "sql_messages"
	// StageOutbox is the commit trigger of each session the batch touched: its unrequested
	// tokens (summed only when not known from the session row), the decision and, when it
	// fires, the outbox row.
	StageOutbox = "outbox"
	// StageSQLCommit is COMMIT (on a durable database, the fsync).
	StageSQLCommit = "sql_commit"
)

// ApplyTurns stores a batch of turns in one transaction: messages deduplicated on
// (account, session, message_id), seq assigned per session, pending tokens and the applied
// TURNS stream seq updated, and for each session the trigger's outbox entries (a commit
// request) written in the same transaction. The SQL work is done per batch, a statement per
// table rather than per message or session: one tombstone check, one locked read of the
// session rows (in sorted order, so concurrent batches cannot deadlock on them), one
// multi-row insert of the messages (see insertMessages for duplicates), one write of the
// session rows back.
func (s *Store) ApplyTurns(ctx context.Context, trigger Trigger, turns []Turn) ([]ApplyResult, error) {
	groups := s.groupTurns(turns)
	var results []ApplyResult
	tm := stages.FromContext(ctx)
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		results = make([]ApplyResult, len(turns))
		for _, g := range groups {
			g.cur, g.batchTokens = nil, 0
		}
		start := time.Now()
		live, err := s.dropTombstoned(ctx, tx, turns, groups, results)
		if err != nil {
			return err
		}
		if err := s.lockSessions(ctx, tx, live); err != nil {
			return err
		}
		live = s.dropForeign(turns, live, results)
		start = tm.Since(StageSQLSessions, start)
		if err := s.insertMessages(ctx, tx, turns, live, results); err != nil {
			return err
		}
		tm.Since(StageSQLMessages, start)
		return s.finishSessions(ctx, tx, tm, trigger, turns, live, results)
	})
	if err != nil {
		return nil, err
	}
	return results, nil
}

// sessionBatch is one session's share of an ApplyTurns batch.
type sessionBatch struct {
	// first is the session's first turn in sorted order: its ids, user, agent and key
	// create the session row, as one turn at a time did.
	first Turn
	key   string
	turns []int // indexes into the batch, in delivery order
	// cur is the locked session row, updated in memory as messages are stored; seqBefore its
	// next_seq when locked; batchTokens the tokens of the messages this batch stored.
	cur         *Session
	seqBefore   int64
	batchTokens int64
}

// groupTurns groups a batch's turns by session, sessions sorted by (account, session) and
// each session's turns in delivery order (per-session seq follows it).
func (s *Store) groupTurns(turns []Turn) []*sessionBatch {
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
	var groups []*sessionBatch
	byKey := map[string]*sessionBatch{}
	for _, i := range order {
		t := turns[i]
		k := s.idKey(t.AccountID, t.SessionID)
		g := byKey[k]
		if g == nil {
			g = &sessionBatch{first: t, key: k}
			byKey[k] = g
			groups = append(groups, g)
		}
		g.turns = append(g.turns, i)
	}
	return groups
}

// idKey joins ids into a map key that is equal when SQL compares them equal: MySQL's
// utf8mb4_bin pads with spaces (trailing spaces do not count), SQLite compares bytes.
func (s *Store) idKey(ids ...string) string {
	var b strings.Builder
	for _, id := range ids {
		if s.dialect == MySQL {
			id = strings.TrimRight(id, " ")
		}
		b.WriteString(id)
		b.WriteByte(0)
	}
	return b.String()
}

// inChunks calls fn with consecutive slices of at most n of items' indexes [lo, hi).
func inChunks(items, n int, fn func(lo, hi int) error) error {
	for lo := 0; lo < items; lo += n {
		if err := fn(lo, min(lo+n, items)); err != nil {
			return err
		}
	}
	return nil
}

// maxInList bounds the ids of one IN (...) list and the rows of one multi-row statement
// (SQLite allows 32766 parameters a statement).
const maxInList = 500

// dropTombstoned checks the users of the batch's turns against the tombstones in one query per
// chunk, marks each turn whose user, or whose user's session, is erased, and returns the
// sessions with the turns left (an erased session is not re-created, not even as an empty row).
// Each turn is checked for its own user: one user's erasure must not drop another's turns.
func (s *Store) dropTombstoned(ctx context.Context, tx *sql.Tx, turns []Turn, groups []*sessionBatch, results []ApplyResult) ([]*sessionBatch, error) {
	type accountUser struct{ account, user string }
	var users []accountUser
	seen := map[string]bool{}
	for _, g := range groups {
		for _, i := range g.turns {
			t := turns[i]
			if k := s.idKey(t.AccountID, t.UserID); !seen[k] {
				seen[k] = true
				users = append(users, accountUser{t.AccountID, t.UserID})
			}
		}
	}
	tombs := map[string]bool{}
	err := inChunks(len(users), maxInList, func(lo, hi int) error {
		var conds []string
		var args []any
		for _, u := range users[lo:hi] {
			conds = append(conds, "(account_id = ? AND user_id = ?)")
			args = append(args, u.account, u.user)
		}
		if err := s.readKeys(ctx, tx, tombs, "SELECT account_id, user_id, session_id FROM tombstones WHERE "+strings.Join(conds, " OR "), args...); err != nil {
			return fmt.Errorf("check tombstones: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var live []*sessionBatch
	for _, g := range groups {
		kept := g.turns[:0:0]
		for _, i := range g.turns {
			t := turns[i]
			if tombs[s.idKey(t.AccountID, t.UserID, "")] || tombs[s.idKey(t.AccountID, t.UserID, t.SessionID)] {
				results[i].Tombstoned = true
				continue
			}
			kept = append(kept, i)
		}
		if b := g.keep(turns, kept); b != nil {
			live = append(live, b)
		}
	}
	return live, nil
}

// dropForeign marks each turn of the locked sessions whose user is not the session's and
// returns the sessions with their own user's turns: one user's key names another user's
// session only by guessing its id, and must neither add to it nor learn that it exists.
func (s *Store) dropForeign(turns []Turn, groups []*sessionBatch, results []ApplyResult) []*sessionBatch {
	var live []*sessionBatch
	for _, g := range groups {
		owner := s.idKey(g.cur.UserID)
		kept := g.turns[:0:0]
		for _, i := range g.turns {
			if s.idKey(turns[i].UserID) != owner {
				results[i].Foreign = true
				continue
			}
			kept = append(kept, i)
		}
		if b := g.keep(turns, kept); b != nil {
			live = append(live, b)
		}
	}
	return live
}

// keep returns g itself when kept holds all its turns, nil when none, and otherwise a copy
// with only those (first the earliest of them): ApplyTurns retries its transaction on a
// conflict, and each try starts again from the whole batch.
func (g *sessionBatch) keep(turns []Turn, kept []int) *sessionBatch {
	switch {
	case len(kept) == len(g.turns):
		return g
	case len(kept) == 0:
		return nil
	}
	b := *g
	b.turns, b.first = kept, turns[kept[0]]
	return &b
}

// lockSessions reads and locks the batch's session rows in one statement per chunk (sorted,
// so concurrent batches lock in one order), then creates the missing ones in one multi-row
// insert and reads those.
func (s *Store) lockSessions(ctx context.Context, tx *sql.Tx, groups []*sessionBatch) error {
	if err := s.readLocked(ctx, tx, groups); err != nil {
		return err
	}
	var missing []*sessionBatch
	for _, g := range groups {
		if g.cur == nil {
			missing = append(missing, g)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	now := s.nowUS()
	err := inChunks(len(missing), maxInList, func(lo, hi int) error {
		var vals []string
		var args []any
		for _, g := range missing[lo:hi] {
			t := g.first
			vals = append(vals, "(?, ?, ?, ?, ?, ?, ?)")
			args = append(args, t.AccountID, t.SessionID, t.UserID, t.AgentID, t.SessionKey, now, now)
		}
		if _, err := tx.ExecContext(ctx, s.insertIgnore()+" sessions (account_id, session_id, user_id, agent_id, session_key, created_us, updated_us) VALUES "+
			strings.Join(vals, ", "), args...); err != nil {
			return fmt.Errorf("create sessions: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := s.readLocked(ctx, tx, missing); err != nil {
		return err
	}
	for _, g := range missing {
		if g.cur == nil {
			return fmt.Errorf("load session %s: %w", g.first.SessionID, ErrNotFound)
		}
	}
	return nil
}

// readLocked sets cur of each group whose session row exists, locking the rows on MySQL.
func (s *Store) readLocked(ctx context.Context, tx *sql.Tx, groups []*sessionBatch) error {
	byKey := make(map[string]*sessionBatch, len(groups))
	for _, g := range groups {
		byKey[g.key] = g
	}
	return inChunks(len(groups), maxInList, func(lo, hi int) error {
		var conds []string
		var args []any
		for j := lo; j < hi; {
			// One (account_id = ? AND session_id IN (...)) per run of one account.
			k := j
			args = append(args, groups[j].first.AccountID)
			for ; k < hi && groups[k].first.AccountID == groups[j].first.AccountID; k++ {
				args = append(args, groups[k].first.SessionID)
			}
			conds = append(conds, "(account_id = ? AND session_id IN (?"+strings.Repeat(", ?", k-j-1)+"))")
			j = k
		}
		rows, err := tx.QueryContext(ctx, "SELECT "+sessionCols+" FROM sessions WHERE "+strings.Join(conds, " OR ")+
			" ORDER BY account_id, session_id"+s.forUpdate(), args...)
		if err != nil {
			return fmt.Errorf("lock sessions: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			x, err := scanSession(rows)
			if err != nil {
				return fmt.Errorf("load sessions: %w", err)
			}
			if g := byKey[s.idKey(x.AccountID, x.SessionID)]; g != nil {
				g.cur, g.seqBefore = x, x.NextSeq
			}
		}
		return rows.Err()
	})
}

// newMessage is a message row to insert and the turn it came with.
type newMessage struct {
	t   *Turn
	m   *Message
	seq int64
}

// insertMessages stores the batch's new messages, seq assigned in delivery order, in one
// multi-row statement per chunk. A message repeated within the batch is dropped first. Then
// the batch is inserted assuming none of its ids is stored yet (the common case: redeliveries
// mostly stop at the dedup check before ingest gets here); the unique key drops any that is,
// and when it dropped one the inserted rows are deleted again — the session rows are locked,
// so the rows at or after the seq each session started from are this batch's — and the batch
// is inserted once more without the ids one read found stored.
func (s *Store) insertMessages(ctx context.Context, tx *sql.Tx, turns []Turn, groups []*sessionBatch, results []ApplyResult) error {
	before := make([]Session, len(groups))
	for gi, g := range groups {
		before[gi] = *g.cur
	}
	rows := s.planMessages(turns, groups, results, nil)
	all, err := s.insertMessageRows(ctx, tx, rows)
	if err != nil || all {
		return err
	}
	if err := s.deleteFrom(ctx, tx, groups); err != nil {
		return err
	}
	stored, err := s.storedMessageIDs(ctx, tx, turns, groups)
	if err != nil {
		return err
	}
	for gi, g := range groups {
		*g.cur, g.batchTokens = before[gi], 0
		for _, i := range g.turns {
			results[i].Stored, results[i].Duplicates = 0, 0
		}
	}
	rows = s.planMessages(turns, groups, results, stored)
	all, err = s.insertMessageRows(ctx, tx, rows)
	if err == nil && !all {
		// The ids were read under the session locks: this cannot happen; a dropped row would
		// leave a hole in seq, so it fails the batch.
		err = errors.New("insert messages: the unique key dropped a message read as new")
	}
	return err
}

// planMessages applies the batch's turns to the locked session rows and returns the message
// rows to insert: the messages whose ids are not in stored, each once, with their seq.
func (s *Store) planMessages(turns []Turn, groups []*sessionBatch, results []ApplyResult, stored map[string]bool) []newMessage {
	if stored == nil {
		stored = map[string]bool{}
	}
	now := s.now()
	var rows []newMessage
	for _, g := range groups {
		cur := g.cur
		for _, i := range g.turns {
			t := &turns[i]
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
			for mi := range t.Messages {
				m := &t.Messages[mi]
				// The session's row, not the turn's spelling, names it: the unique key compares
				// (account, session, message_id) the way idKey does.
				k := s.idKey(g.first.AccountID, g.first.SessionID, m.MessageID)
				if stored[k] {
					results[i].Duplicates++
					continue
				}
				stored[k] = true
				rows = append(rows, newMessage{t: t, m: m, seq: cur.NextSeq})
				results[i].Stored++
				cur.IdleSince = now
				cur.NextSeq++
				cur.MessageCount++
				cur.PendingTokens += int64(m.Tokens)
				g.batchTokens += int64(m.Tokens)
			}
		}
	}
	return rows
}

// insertMessageRows inserts rows, dropping those the unique key rejects; all reports whether
// every row was stored (false: it stopped at the first statement that dropped one).
func (s *Store) insertMessageRows(ctx context.Context, tx *sql.Tx, rows []newMessage) (all bool, err error) {
	all = true
	err = s.messageChunks(len(rows), func(lo, hi int) error {
		if !all {
			return nil
		}
		args := make([]any, 0, 12*(hi-lo))
		for _, r := range rows[lo:hi] {
			args = append(args, r.t.AccountID, r.t.SessionID, r.seq, r.m.MessageID, r.t.EventID, r.m.Position, r.m.Role, r.m.Name,
				r.m.Content, string(r.m.Parts), r.m.Tokens, r.m.CreatedAt.UnixMicro())
		}
		res, err := s.execRows(ctx, tx, insertMessagesSQL(s.insertIgnore(), hi-lo), args)
		if err != nil {
			return fmt.Errorf("insert messages: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("insert messages: %w", err)
		}
		all = n == int64(hi-lo)
		return nil
	})
	return all, err
}

// insertMessagesSQL is the multi-row insert of n message rows.
func insertMessagesSQL(insert string, n int) string {
	return insert + " messages (account_id, session_id, seq, message_id, event_id, position, role, name, content, parts, tokens, created_us) VALUES " +
		"(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)" + strings.Repeat(", (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", n-1)
}

// messageChunks calls fn with the chunks [lo, hi) of items rows that insertMessageRows
// sends as one statement each. On MySQL (the driver interpolates the arguments: a statement
// is one round trip, whatever its text) they are chunks of maxMessageRows and a remainder.
// On SQLite the remainder is split into powers of two, so a statement has one of nine texts
// and execRows runs it prepared: parsing a fresh statement of hundreds of rows cost about a
// fifth of the messages' insert.
func (s *Store) messageChunks(items int, fn func(lo, hi int) error) error {
	if s.dialect != SQLite {
		return inChunks(items, maxMessageRows, fn)
	}
	for lo := 0; lo < items; {
		n := maxMessageRows
		for n > items-lo {
			n /= 2
		}
		if err := fn(lo, lo+n); err != nil {
			return err
		}
		lo += n
	}
	return nil
}

// execRows runs a write inside tx; on SQLite through the statement prepared once for query
// (per connection, by database/sql: see prepared).
func (s *Store) execRows(ctx context.Context, tx *sql.Tx, query string, args []any) (sql.Result, error) {
	if s.dialect != SQLite {
		return tx.ExecContext(ctx, query, args...)
	}
	st, err := s.prepared(ctx, query)
	if err != nil {
		return nil, err
	}
	txst := tx.StmtContext(ctx, st)
	defer txst.Close()
	return txst.ExecContext(ctx, args...)
}

// deleteFrom deletes the messages at or after the seq each locked session started the batch
// from: the rows this batch inserted.
func (s *Store) deleteFrom(ctx context.Context, tx *sql.Tx, groups []*sessionBatch) error {
	return inChunks(len(groups), maxInList, func(lo, hi int) error {
		conds := make([]string, 0, hi-lo)
		args := make([]any, 0, 3*(hi-lo))
		for _, g := range groups[lo:hi] {
			conds = append(conds, "(account_id = ? AND session_id = ? AND seq >= ?)")
			args = append(args, g.cur.AccountID, g.cur.SessionID, g.seqBefore)
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM messages WHERE "+strings.Join(conds, " OR "), args...); err != nil {
			return fmt.Errorf("undo message inserts: %w", err)
		}
		return nil
	})
}

// storedMessageIDs reads which of the batch's message ids are stored already, as idKeys.
func (s *Store) storedMessageIDs(ctx context.Context, tx *sql.Tx, turns []Turn, groups []*sessionBatch) (map[string]bool, error) {
	type msgRef struct{ g, t, m int }
	var refs []msgRef
	for gi, g := range groups {
		for _, i := range g.turns {
			for mi := range turns[i].Messages {
				refs = append(refs, msgRef{gi, i, mi})
			}
		}
	}
	stored := map[string]bool{}
	err := inChunks(len(refs), maxInList, func(lo, hi int) error {
		var conds []string
		var args []any
		for j := lo; j < hi; {
			// One (account_id = ? AND session_id = ? AND message_id IN (...)) per run of one session.
			k := j
			g := groups[refs[j].g]
			args = append(args, g.first.AccountID, g.first.SessionID)
			for ; k < hi && refs[k].g == refs[j].g; k++ {
				args = append(args, turns[refs[k].t].Messages[refs[k].m].MessageID)
			}
			conds = append(conds, "(account_id = ? AND session_id = ? AND message_id IN (?"+strings.Repeat(", ?", k-j-1)+"))")
			j = k
		}
		if err := s.readKeys(ctx, tx, stored, "SELECT account_id, session_id, message_id FROM messages WHERE "+strings.Join(conds, " OR "), args...); err != nil {
			return fmt.Errorf("read stored message ids: %w", err)
		}
		return nil
	})
	return stored, err
}

// readKeys adds the idKey of every row of a query that selects three id columns to into.
func (s *Store) readKeys(ctx context.Context, tx *sql.Tx, into map[string]bool, query string, args ...any) error {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var a, b, c string
		if err := rows.Scan(&a, &b, &c); err != nil {
			return err
		}
		into[s.idKey(a, b, c)] = true
	}
	return rows.Err()
}

// maxMessageRows bounds the rows of one multi-row message insert (12 parameters a row); a
// power of two (messageChunks).
const maxMessageRows = 256

// finishSessions asks the trigger about each session, writes the outbox entries of those
// that fire and the session rows back in one multi-row upsert per chunk.
func (s *Store) finishSessions(ctx context.Context, tx *sql.Tx, tm *stages.Timer, trigger Trigger, turns []Turn, groups []*sessionBatch, results []ApplyResult) error {
	start := time.Now()
	var entries []OutboxEntry
	for _, g := range groups {
		cur := g.cur
		if trigger == nil || cur.NextSeq-1 <= cur.CommitRequestedUpto {
			continue
		}
		unrequested, err := s.unrequestedTokens(ctx, tx, g)
		if err != nil {
			return err
		}
		upto, es, err := trigger(Pending{AccountID: cur.AccountID, SessionID: cur.SessionID, UserID: cur.UserID, AgentID: cur.AgentID,
			NewestSeq: cur.NextSeq - 1, CommitRequestedUpto: cur.CommitRequestedUpto, UnrequestedTokens: unrequested,
			Threshold: cur.CommitThreshold, KeepRecent: cur.KeepRecent})
		if err != nil {
			return fmt.Errorf("commit trigger %s/%s: %w", cur.AccountID, cur.SessionID, err)
		}
		if len(es) > 0 {
			entries = append(entries, es...)
			cur.CommitRequestedUpto = upto
			// Report the request on the last turn of this session in the batch.
			results[g.turns[len(g.turns)-1]].CommitUpto = upto
		}
	}
	if err := s.insertOutbox(ctx, tx, entries); err != nil {
		return err
	}
	start = tm.Since(StageOutbox, start)
	err := s.writeSessions(ctx, tx, groups)
	tm.Since(StageSQLSessions, start)
	return err
}

// unrequestedTokens are the tokens of g's unarchived messages after commit_requested_upto.
// It is summed from the messages unless it is known without them:
//   - nothing before this batch was outside a request (commit_requested_upto ≥ the seq the
//     batch started from − 1): the messages after it are this batch's, all unarchived;
//   - nothing was ever requested or archived (commit_requested_upto and archived_upto 0):
//     every message counts and none is archived, so it is pending_tokens, which every writer
//     keeps as the sum of the session's unarchived tokens (insert adds, CreateArchive
//     subtracts what it archived, erase deletes the row).
func (s *Store) unrequestedTokens(ctx context.Context, tx *sql.Tx, g *sessionBatch) (int64, error) {
	cur := g.cur
	switch {
	case cur.CommitRequestedUpto >= g.seqBefore-1:
		return g.batchTokens, nil
	case cur.CommitRequestedUpto == 0 && cur.ArchivedUpto == 0:
		return cur.PendingTokens, nil
	}
	var n sql.NullInt64
	err := tx.QueryRowContext(ctx, `SELECT SUM(tokens) FROM messages WHERE account_id = ? AND session_id = ? AND seq > ? AND archive_id IS NULL`,
		cur.AccountID, cur.SessionID, cur.CommitRequestedUpto).Scan(&n)
	return n.Int64, err
}

// writeSessions writes the batch's session rows back: one multi-row upsert per chunk (every
// row exists and is locked, so it always updates).
func (s *Store) writeSessions(ctx context.Context, tx *sql.Tx, groups []*sessionBatch) error {
	cols := []string{"next_seq", "message_count", "pending_tokens", "commit_requested_upto", "applied_turns_seq",
		"commit_threshold", "keep_recent", "idle_since_us", "updated_us"}
	sets := make([]string, len(cols))
	for i, c := range cols {
		if s.dialect == MySQL {
			sets[i] = c + " = VALUES(" + c + ")"
		} else {
			sets[i] = c + " = excluded." + c
		}
	}
	upsert := " ON CONFLICT (account_id, session_id) DO UPDATE SET "
	if s.dialect == MySQL {
		upsert = " ON DUPLICATE KEY UPDATE "
	}
	now := s.nowUS()
	return inChunks(len(groups), maxInList, func(lo, hi int) error {
		vals := make([]string, 0, hi-lo)
		var args []any
		for _, g := range groups[lo:hi] {
			cur := g.cur
			vals = append(vals, "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
			args = append(args, cur.AccountID, cur.SessionID, cur.UserID, unixMicro(cur.CreatedAt),
				cur.NextSeq, cur.MessageCount, cur.PendingTokens, cur.CommitRequestedUpto, cur.AppliedTurnsSeq,
				nullInt(cur.CommitThreshold), nullInt(cur.KeepRecent), unixMicro(cur.IdleSince), now)
		}
		_, err := tx.ExecContext(ctx, "INSERT INTO sessions (account_id, session_id, user_id, created_us, "+strings.Join(cols, ", ")+") VALUES "+
			strings.Join(vals, ", ")+upsert+strings.Join(sets, ", "), args...)
		if err != nil {
			return fmt.Errorf("update sessions: %w", err)
		}
		return nil
	})
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
	x, err := scanSession(q.QueryRowContext(ctx, query, account, session))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("load session %s: %w", session, err)
	}
	return x, nil
}

// scanSession scans one row of sessionCols.
func scanSession(row interface{ Scan(dest ...any) error }) (*Session, error) {
	var x Session
	var th, kr sql.NullInt64
	var ov sql.NullString
	var c, u, idle int64
	if err := row.Scan(&x.AccountID, &x.SessionID, &x.UserID, &x.AgentID, &x.SessionKey,
		&x.NextSeq, &x.MessageCount, &x.PendingTokens, &x.CommitRequestedUpto, &x.ArchivedUpto, &x.AppliedTurnsSeq,
		&x.Epoch, &x.CommitCount, &th, &kr, &x.SummarizedUpto, &idle, &ov, &c, &u); err != nil {
		return nil, err
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
// the session does not exist yet): a maximum, not a watermark — ingest's workers apply a
// session's events out of stream order, so an earlier event may still be unapplied.
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

// ArchiveMessages returns the messages of an archive's range (FromSeq ≤ seq ≤ ToSeq) in
// history order: (created_at, position), then seq. seq is the storage order, and ingest's
// workers may store a session's turns out of the order they were said in (a turn fetched by
// one worker is stored after the later turns another worker stored first; SPEC §5), while
// extraction, summaries, the index's previous turn and a reader of the archive want the
// conversation as it was held.
func (s *Store) ArchiveMessages(ctx context.Context, a Archive) ([]Message, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+messageCols+" FROM messages WHERE account_id = ? AND session_id = ? AND seq BETWEEN ? AND ? ORDER BY created_us, position, seq",
		a.AccountID, a.SessionID, a.FromSeq, a.ToSeq)
	if err != nil {
		return nil, err
	}
	return scanMessages(rows)
}

// MessagesBySeq returns the messages with from ≤ seq ≤ to, in seq order. Recall reads each
// archive item it keeps with it, so it goes through query's prepared statement.
func (s *Store) MessagesBySeq(ctx context.Context, account, session string, from, to int64) ([]Message, error) {
	rows, err := s.query(ctx, "SELECT "+messageCols+" FROM messages WHERE account_id = ? AND session_id = ? AND seq BETWEEN ? AND ? ORDER BY seq",
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
