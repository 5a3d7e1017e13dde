package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// IdleRequest builds the outbox entry of an idle session's commit (ingest decides what the
// request is); upto is the session's newest seq.
type IdleRequest func(sess *Session, upto int64) (OutboxEntry, error)

// RequestIdleCommits writes request's entry into the outbox for each session whose newest turn
// was stored before idleBefore and that still holds messages no commit has archived, at most
// limit sessions a call, and returns the entries written. Each session is handled in its own
// transaction under its row lock and its idle mark is cleared in that transaction, so however
// many replicas sweep at once a session is requested once per idle period (and a repeated
// entry id is dropped by the outbox and by JetStream's dedup window).
func (s *Store) RequestIdleCommits(ctx context.Context, idleBefore time.Time, limit int, request IdleRequest) ([]OutboxEntry, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT account_id, session_id FROM sessions WHERE idle_since_us > 0 AND idle_since_us < ? ORDER BY idle_since_us LIMIT ?",
		idleBefore.UnixMicro(), limit)
	if err != nil {
		return nil, fmt.Errorf("find idle sessions: %w", err)
	}
	type key struct{ account, session string }
	var due []key
	for rows.Next() {
		var k key
		if err := rows.Scan(&k.account, &k.session); err != nil {
			rows.Close()
			return nil, err
		}
		due = append(due, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var out []OutboxEntry
	for _, k := range due {
		req, ok, err := s.requestIdleCommit(ctx, request, k.account, k.session, idleBefore)
		if err != nil {
			return out, fmt.Errorf("idle commit %s/%s: %w", k.account, k.session, err)
		}
		if ok {
			out = append(out, req)
		}
	}
	return out, nil
}

func (s *Store) requestIdleCommit(ctx context.Context, request IdleRequest, account, session string, idleBefore time.Time) (OutboxEntry, bool, error) {
	var entry OutboxEntry
	queued := false
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		sess, err := s.getSession(ctx, tx, account, session, true)
		if errors.Is(err, ErrNotFound) {
			return nil // erased meanwhile
		}
		if err != nil {
			return err
		}
		// Another replica took it, or a new turn arrived since the scan: not idle now.
		if sess.IdleSince.IsZero() || !sess.IdleSince.Before(idleBefore) {
			return nil
		}
		if _, err := tx.ExecContext(ctx, "UPDATE sessions SET idle_since_us = 0 WHERE account_id = ? AND session_id = ?", account, session); err != nil {
			return err
		}
		upto := sess.NextSeq - 1
		if upto <= sess.ArchivedUpto {
			return nil // everything is archived already (a sync commit or compact came first)
		}
		tomb, err := s.tombstonedTx(ctx, tx, account, sess.UserID, session)
		if err != nil || tomb {
			return err
		}
		entry, err = request(sess, upto)
		if err != nil {
			return err
		}
		if upto > sess.CommitRequestedUpto {
			if _, err := tx.ExecContext(ctx, "UPDATE sessions SET commit_requested_upto = ? WHERE account_id = ? AND session_id = ?", upto, account, session); err != nil {
				return err
			}
		}
		queued = true
		return s.insertOutbox(ctx, tx, []OutboxEntry{entry})
	})
	return entry, queued && err == nil, err
}
