package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/membus/membus/pkg/outbox"
)

// OutboxEntry is one event to publish after the transaction that wrote it commits.
type OutboxEntry struct {
	ID      string // deterministic; also the Nats-Msg-Id
	Subject string
	Payload []byte
}

// insertOutbox adds entries inside tx; a repeated id is ignored (the first write wins).
func (s *Store) insertOutbox(ctx context.Context, tx *sql.Tx, entries []OutboxEntry) error {
	for _, e := range entries {
		if _, err := tx.ExecContext(ctx, s.insertIgnore()+" outbox (id, subject, payload, created_us) VALUES (?, ?, ?, ?)",
			e.ID, e.Subject, e.Payload, s.nowUS()); err != nil {
			return fmt.Errorf("insert outbox %s: %w", e.ID, err)
		}
	}
	return nil
}

// Outbox returns the store's outbox as the relay reads it.
func (s *Store) Outbox() outbox.Store { return outboxStore{s} }

type outboxStore struct{ s *Store }

// Claim implements outbox.Store: rows are locked with FOR UPDATE SKIP LOCKED on MySQL so
// concurrent relays never hold one row at once; SQLite's immediate transaction excludes them.
func (o outboxStore) Claim(ctx context.Context, limit int, subjects []string, fn func(context.Context, outbox.Row) error) (int, error) {
	s := o.s
	marked := 0
	// A prefix is compared with SUBSTR, not LIKE: subject prefixes may hold "_", a LIKE wildcard.
	var where string
	var args []any
	if subjects != nil {
		conds := make([]string, 0, len(subjects))
		for _, p := range subjects {
			conds = append(conds, "SUBSTR(subject, 1, ?) = ?")
			args = append(args, len(p), p)
		}
		if len(conds) == 0 {
			return 0, nil
		}
		where = " AND (" + strings.Join(conds, " OR ") + ")"
	}
	args = append(args, limit)
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		marked = 0
		q := "SELECT id, subject, payload, created_us, attempts FROM outbox WHERE sent_us IS NULL AND dead_us IS NULL" + where + " ORDER BY created_us, id LIMIT ?"
		if s.dialect == MySQL {
			q += " FOR UPDATE SKIP LOCKED"
		}
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return err
		}
		var batch []outbox.Row
		for rows.Next() {
			var r outbox.Row
			var us int64
			if err := rows.Scan(&r.ID, &r.Subject, &r.Payload, &us, &r.Attempts); err != nil {
				rows.Close()
				return err
			}
			r.CreatedAt = time.UnixMicro(us)
			batch = append(batch, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, r := range batch {
			perr := fn(ctx, r)
			switch {
			case perr == nil:
				if _, err := tx.ExecContext(ctx, "UPDATE outbox SET sent_us = ?, attempts = attempts + 1 WHERE id = ?", s.nowUS(), r.ID); err != nil {
					return err
				}
			case errors.Is(perr, outbox.ErrUnpublishable):
				if _, err := tx.ExecContext(ctx, "UPDATE outbox SET dead_us = ?, dead_reason = ?, attempts = attempts + 1 WHERE id = ?", s.nowUS(), perr.Error(), r.ID); err != nil {
					return err
				}
			default:
				return nil // keep what was marked; the rest stays pending
			}
			marked++
		}
		return nil
	})
	return marked, err
}

// Prune deletes rows sent before the cut-off (the stream's duplicate window has passed).
func (o outboxStore) Prune(ctx context.Context, sentBefore time.Time) (int, error) {
	res, err := o.s.db.ExecContext(ctx, "DELETE FROM outbox WHERE sent_us IS NOT NULL AND sent_us < ?", sentBefore.UnixMicro())
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// OutboxPending counts rows not yet published (for metrics and tests).
func (s *Store) OutboxPending(ctx context.Context) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM outbox WHERE sent_us IS NULL AND dead_us IS NULL").Scan(&n)
	return n, err
}

// QueueEvents inserts outbox entries in a transaction of their own, for events that follow
// no other write (a commit that found nothing to archive still completes).
func (s *Store) QueueEvents(ctx context.Context, entries []OutboxEntry) error {
	return s.inTx(ctx, func(tx *sql.Tx) error { return s.insertOutbox(ctx, tx, entries) })
}
