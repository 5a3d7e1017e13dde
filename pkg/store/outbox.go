package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
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

// Claim implements outbox.Store. On MySQL the rows are locked with FOR UPDATE SKIP LOCKED in
// the transaction that marks them, so concurrent relays never hold one row at once. On SQLite
// (one process's database) the claim must not hold the database's single write lock while fn
// publishes: a publish waits for JetStream's PubAck — an fsync with sync always — and ingest,
// extract and every other writer would wait with it. There the store's claim mutex keeps this
// process's relays apart instead: the rows are read, handed to fn, and marked in one short
// transaction after. A row erased meanwhile is published all the same, as on MySQL, where the
// erase waits for the claim's row locks: the tombstone, not the outbox row, stops what follows.
// On SQLite that transaction does not wait for an fsync of its own (markLazily).
func (o outboxStore) Claim(ctx context.Context, limit int, subjects []string, fn func(context.Context, outbox.Row) error) (int, error) {
	s := o.s
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
	q := "SELECT id, subject, payload, created_us, attempts FROM outbox WHERE sent_us IS NULL AND dead_us IS NULL" + where + " ORDER BY created_us, id LIMIT ?"
	if s.dialect == SQLite {
		s.claimMu.Lock()
		defer s.claimMu.Unlock()
		batch, err := readOutbox(ctx, s.db, q, args)
		if err != nil {
			return 0, err
		}
		outcomes := publishOutbox(ctx, batch, fn)
		if len(outcomes) == 0 {
			return 0, nil
		}
		err = s.markLazily(ctx, func(tx *sql.Tx) error { return s.markOutbox(ctx, tx, batch, outcomes) })
		return len(outcomes), err
	}
	marked := 0
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		batch, err := readOutbox(ctx, tx, q+" FOR UPDATE SKIP LOCKED", args)
		if err != nil {
			return err
		}
		outcomes := publishOutbox(ctx, batch, fn)
		marked = len(outcomes)
		return s.markOutbox(ctx, tx, batch, outcomes)
	})
	return marked, err
}

// markLazily runs fn, which marks claimed rows on SQLite, in a transaction committed with
// synchronous=NORMAL: written to the WAL but not fsynced. Every other transaction commits with
// synchronous=FULL and its fsync of the WAL, a file written in order, makes the marks before it
// durable too. So a mark is lost only by the machine itself stopping (not by the process
// crashing) before the next of those — and a lost mark costs what a crash between a publish and
// its mark always could: the row is published again, deduplicated by its Nats-Msg-Id. Marking
// with a fsync of its own held SQLite's single write lock through that fsync: with sync always
// each claim's mark (one or more per commit) made ingest's and extract's transactions wait.
func (s *Store) markLazily(ctx context.Context, fn func(tx *sql.Tx) error) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "PRAGMA synchronous = NORMAL"); err != nil {
		return err
	}
	defer func() {
		// The connection goes back to the pool: with FULL again, or not at all.
		if _, err := conn.ExecContext(context.WithoutCancel(ctx), "PRAGMA synchronous = FULL"); err != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// readOutbox reads the rows a claim query selects.
func readOutbox(ctx context.Context, q querier, query string, args []any) ([]outbox.Row, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var batch []outbox.Row
	for rows.Next() {
		var r outbox.Row
		var us int64
		if err := rows.Scan(&r.ID, &r.Subject, &r.Payload, &us, &r.Attempts); err != nil {
			return nil, err
		}
		r.CreatedAt = time.UnixMicro(us)
		batch = append(batch, r)
	}
	return batch, rows.Err()
}

// publishOutbox hands the rows to fn in order and returns fn's error of each row settled —
// nil (sent) or one wrapping ErrUnpublishable (dead) — stopping at the first other error.
func publishOutbox(ctx context.Context, batch []outbox.Row, fn func(context.Context, outbox.Row) error) []error {
	var outcomes []error
	for _, r := range batch {
		perr := fn(ctx, r)
		if perr != nil && !errors.Is(perr, outbox.ErrUnpublishable) {
			break // the rest stays pending
		}
		outcomes = append(outcomes, perr)
	}
	return outcomes
}

// markOutbox marks the first len(outcomes) rows of batch sent or dead.
func (s *Store) markOutbox(ctx context.Context, tx *sql.Tx, batch []outbox.Row, outcomes []error) error {
	for i, perr := range outcomes {
		var err error
		if perr == nil {
			_, err = tx.ExecContext(ctx, "UPDATE outbox SET sent_us = ?, attempts = attempts + 1 WHERE id = ?", s.nowUS(), batch[i].ID)
		} else {
			_, err = tx.ExecContext(ctx, "UPDATE outbox SET dead_us = ?, dead_reason = ?, attempts = attempts + 1 WHERE id = ?", s.nowUS(), perr.Error(), batch[i].ID)
		}
		if err != nil {
			return err
		}
	}
	return nil
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
