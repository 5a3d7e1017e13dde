package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Digest is a period summary of one user (AgentID "") or of one agent of a user: a row of the
// summaries table whose id is memory.DigestID(account, user, agent, period, bucket).
type Digest struct {
	ID        string
	AccountID string
	UserID    string
	AgentID   string
	Period    string // day | week | month
	Bucket    string // 2026-11-30 | 2026-W49 | 2026-11
	Text      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// DigestOwner is one user (AgentID "") or agent of a user with something to digest.
type DigestOwner struct {
	AccountID string
	UserID    string
	AgentID   string
}

// DigestOwners lists the users, and the agents of users, with memories (other than digests)
// or archives created in [from, to), in a stable order. Erased users are left out.
func (s *Store) DigestOwners(ctx context.Context, from, to time.Time) ([]DigestOwner, error) {
	f, t := from.UnixMicro(), to.UnixMicro()
	rows, err := s.db.QueryContext(ctx, `SELECT account_id, user_id, '' FROM memories WHERE created_us >= ? AND created_us < ? AND category <> 'digest'
		UNION SELECT account_id, user_id, '' FROM archives WHERE created_us >= ? AND created_us < ?
		UNION SELECT account_id, user_id, agent_id FROM memories WHERE created_us >= ? AND created_us < ? AND category <> 'digest' AND scope = 'agent' AND agent_id <> ''
		UNION SELECT account_id, user_id, agent_id FROM archives WHERE created_us >= ? AND created_us < ? AND agent_id <> ''
		ORDER BY 1, 2, 3`, f, t, f, t, f, t, f, t)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []DigestOwner
	for rows.Next() {
		var o DigestOwner
		if err := rows.Scan(&o.AccountID, &o.UserID, &o.AgentID); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	kept := out[:0]
	for _, o := range out {
		tomb, err := s.tombstonedTx(ctx, s.db, o.AccountID, o.UserID, "")
		if err != nil {
			return nil, err
		}
		if !tomb {
			kept = append(kept, o)
		}
	}
	return kept, nil
}

// PeriodMemories returns the active memories (digests excluded) of a user's scope (agent "")
// or of one agent's scope created in [from, to), most important first, at most limit.
func (s *Store) PeriodMemories(ctx context.Context, o DigestOwner, from, to time.Time, limit int) ([]Memory, error) {
	q := "SELECT " + memoryCols + ` FROM memories WHERE account_id = ? AND user_id = ? AND created_us >= ? AND created_us < ?
		AND category <> 'digest' AND valid_to_us IS NULL AND superseded_by IS NULL AND duplicate_of IS NULL`
	args := []any{o.AccountID, o.UserID, from.UnixMicro(), to.UnixMicro()}
	if o.AgentID == "" {
		q += " AND scope = 'user'"
	} else {
		q += " AND scope = 'agent' AND agent_id = ?"
		args = append(args, o.AgentID)
	}
	q += fmt.Sprintf(" ORDER BY importance DESC, created_us, id LIMIT %d", max(limit, 1))
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return scanMemories(rows)
}

// PeriodArchives returns the archives with an abstract created in [from, to) of a user (agent
// "": all of them) or of one agent, in creation order, at most limit.
func (s *Store) PeriodArchives(ctx context.Context, o DigestOwner, from, to time.Time, limit int) ([]Archive, error) {
	q := "SELECT " + archiveCols + ` FROM archives WHERE account_id = ? AND user_id = ? AND created_us >= ? AND created_us < ?
		AND abstract IS NOT NULL AND abstract <> ''`
	args := []any{o.AccountID, o.UserID, from.UnixMicro(), to.UnixMicro()}
	if o.AgentID != "" {
		q += " AND agent_id = ?"
		args = append(args, o.AgentID)
	}
	q += fmt.Sprintf(" ORDER BY created_us, from_seq LIMIT %d", max(limit, 1))
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return scanArchives(rows)
}

// SaveDigest stores a digest and its recallable memory row (the same id, category digest, no
// sources) in one transaction with its events; a digest rebuilt for the same bucket replaces
// its predecessor in both tables. ErrTombstoned when the user was erased.
func (s *Store) SaveDigest(ctx context.Context, d Digest, m Memory, events []OutboxEntry) error {
	if d.ID == "" || d.ID != m.ID {
		return fmt.Errorf("save digest: the digest id %q and its memory id %q must be equal and set", d.ID, m.ID)
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		tomb, err := s.tombstonedTx(ctx, tx, d.AccountID, d.UserID, "")
		if err != nil {
			return err
		}
		if tomb {
			return ErrTombstoned
		}
		now := s.nowUS()
		res, err := tx.ExecContext(ctx, "UPDATE summaries SET text = ?, updated_us = ? WHERE id = ? AND account_id = ?", d.Text, now, d.ID, d.AccountID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			if _, err := tx.ExecContext(ctx, `INSERT INTO summaries (id, account_id, user_id, agent_id, period, bucket, text, created_us, updated_us)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, d.ID, d.AccountID, d.UserID, d.AgentID, d.Period, d.Bucket, d.Text, now, now); err != nil {
				return fmt.Errorf("insert digest %s: %w", d.ID, err)
			}
		}
		res, err = tx.ExecContext(ctx, `UPDATE memories SET value = ?, abstract = ?, text = ?, importance = ?, sources = '[]', event_us = ?,
			valid_from_us = ?, valid_to_us = NULL, superseded_by = NULL, duplicate_of = NULL, content_hash = ?, embedding = ?, embed_model = ?, updated_us = ?
			WHERE id = ? AND account_id = ?`,
			m.Value, m.Abstract, m.Text, m.Importance, timeUS(m.EventTime), m.ValidFrom.UnixMicro(), m.ContentHash,
			EncodeVector(m.Embedding), m.EmbedModel, now, m.ID, m.AccountID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			if _, err := tx.ExecContext(ctx, `INSERT INTO memories (id, account_id, user_id, agent_id, scope, category, subject, attribute, polarity,
				value, abstract, text, importance, sources, event_us, valid_from_us, content_hash, embedding, embed_model, created_us, updated_us)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '[]', ?, ?, ?, ?, ?, ?, ?)`,
				m.ID, m.AccountID, m.UserID, m.AgentID, m.Scope, m.Category, m.Subject, m.Attribute, m.Polarity,
				m.Value, m.Abstract, m.Text, m.Importance, timeUS(m.EventTime), m.ValidFrom.UnixMicro(),
				m.ContentHash, EncodeVector(m.Embedding), m.EmbedModel, now, now); err != nil {
				return fmt.Errorf("insert digest memory %s: %w", m.ID, err)
			}
		}
		return s.insertOutbox(ctx, tx, events)
	})
}

// GetDigest loads the digest of (account, user, agent, period, bucket), or ErrNotFound.
func (s *Store) GetDigest(ctx context.Context, account, user, agent, period, bucket string) (Digest, error) {
	d := Digest{AccountID: account, UserID: user, AgentID: agent, Period: period, Bucket: bucket}
	var c, u int64
	err := s.db.QueryRowContext(ctx, `SELECT id, text, created_us, updated_us FROM summaries
		WHERE account_id = ? AND user_id = ? AND agent_id = ? AND period = ? AND bucket = ?`,
		account, user, agent, period, bucket).Scan(&d.ID, &d.Text, &c, &u)
	if errors.Is(err, sql.ErrNoRows) {
		return Digest{}, ErrNotFound
	}
	if err != nil {
		return Digest{}, err
	}
	d.CreatedAt, d.UpdatedAt = time.UnixMicro(c).UTC(), time.UnixMicro(u).UTC()
	return d, nil
}

// JobState is what the jobs table records of one scheduled job.
type JobState struct {
	Bucket    string    // the last bucket completed ("" when never)
	Watermark time.Time // the dedup sweep's watermark (zero when never)
}

// Job returns the state of a scheduled job (the zero state when it never completed).
func (s *Store) Job(ctx context.Context, name string) (JobState, error) {
	var st JobState
	var w int64
	err := s.db.QueryRowContext(ctx, "SELECT bucket, watermark_us FROM jobs WHERE name = ?", name).Scan(&st.Bucket, &w)
	if errors.Is(err, sql.ErrNoRows) {
		return JobState{}, nil
	}
	if err != nil {
		return JobState{}, err
	}
	if w > 0 {
		st.Watermark = time.UnixMicro(w).UTC()
	}
	return st, nil
}

// CompleteJob records that a job completed bucket (and, for the dedup sweep, its new
// watermark). Both only move forward: buckets of one job compare as strings (their formats
// are fixed-width), so a late replica finishing an older bucket cannot move the job back.
func (s *Store) CompleteJob(ctx context.Context, name, bucket string, watermark time.Time) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		var cur string
		var w int64
		err := tx.QueryRowContext(ctx, "SELECT bucket, watermark_us FROM jobs WHERE name = ?"+s.forUpdate(), name).Scan(&cur, &w)
		wm := int64(0)
		if !watermark.IsZero() {
			wm = watermark.UnixMicro()
		}
		switch {
		case errors.Is(err, sql.ErrNoRows):
			_, err = tx.ExecContext(ctx, "INSERT INTO jobs (name, bucket, watermark_us, updated_us) VALUES (?, ?, ?, ?)", name, bucket, wm, s.nowUS())
			return err
		case err != nil:
			return err
		}
		_, err = tx.ExecContext(ctx, "UPDATE jobs SET bucket = ?, watermark_us = ?, updated_us = ? WHERE name = ?",
			max(cur, bucket), max(w, wm), s.nowUS(), name)
		return err
	})
}

// ChangedMemories pages through the active memories (digests excluded) changed after the
// cursor (updated_us, id) up to until, in (updated_us, id) order: the dedup sweep's input.
func (s *Store) ChangedMemories(ctx context.Context, after time.Time, afterID string, until time.Time, limit int) ([]Memory, error) {
	a := after.UnixMicro()
	if after.IsZero() {
		a = 0
	}
	rows, err := s.db.QueryContext(ctx, "SELECT "+memoryCols+` FROM memories
		WHERE (updated_us > ? OR (updated_us = ? AND id > ?)) AND updated_us <= ?
		AND category <> 'digest' AND valid_to_us IS NULL AND superseded_by IS NULL AND duplicate_of IS NULL
		ORDER BY updated_us, id LIMIT ?`, a, a, afterID, until.UnixMicro(), max(limit, 1))
	if err != nil {
		return nil, err
	}
	return scanMemories(rows)
}

// MarkDuplicate marks memory id of a user as a duplicate of `of` and unions its sources into
// `of` (a dedup never drops provenance). Both must be active memories of the user; it reports
// false (and changes nothing) otherwise, e.g. when a concurrent write superseded one of them.
func (s *Store) MarkDuplicate(ctx context.Context, account, user, id, of string, events []OutboxEntry) (bool, error) {
	if id == of {
		return false, nil
	}
	marked := false
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		marked = false
		rows, err := tx.QueryContext(ctx, "SELECT "+memoryCols+" FROM memories WHERE account_id = ? AND user_id = ? AND id IN (?, ?)"+s.forUpdate(),
			account, user, id, of)
		if err != nil {
			return err
		}
		ms, err := scanMemories(rows)
		if err != nil {
			return err
		}
		var dup, keep *Memory
		for i := range ms {
			switch ms[i].ID {
			case id:
				dup = &ms[i]
			case of:
				keep = &ms[i]
			}
		}
		if dup == nil || keep == nil || !dup.Active() || !keep.Active() {
			return nil
		}
		now := s.nowUS()
		if _, err := tx.ExecContext(ctx, "UPDATE memories SET duplicate_of = ?, updated_us = ? WHERE id = ? AND account_id = ?", of, now, id, account); err != nil {
			return err
		}
		merged, _ := json.Marshal(sortSources(append(keep.Sources, dup.Sources...)))
		if _, err := tx.ExecContext(ctx, "UPDATE memories SET sources = ? WHERE id = ? AND account_id = ?", string(merged), of, account); err != nil {
			return err
		}
		for _, src := range dup.Sources {
			if _, err := tx.ExecContext(ctx, s.insertIgnore()+" memory_sources (memory_id, account_id, session_id, message_id) VALUES (?, ?, ?, ?)",
				of, account, src.SessionID, src.MessageID); err != nil {
				return err
			}
		}
		marked = true
		return s.insertOutbox(ctx, tx, events)
	})
	return marked, err
}
