package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
)

// What ImportMemories did with one memory.
const (
	ImportCreated   = "created"   // a new row
	ImportMerged    = "merged"    // the user held it already: its new sources were added
	ImportUnchanged = "unchanged" // the user held it already with every source (or superseded it since)
	ImportErased    = "erased"    // every source is in an erased session: not restored
)

// ImportResult is the outcome of one imported memory: the row it is now (its own id, or the
// user's row that already held the same text) and what happened.
type ImportResult struct {
	ID      string
	Outcome string
}

// ImportMemories restores memories of one user (an export of `membus export`) in one
// transaction. Each memory is matched against the user's rows by id, then by content hash in
// the same category and scope: a match gains the sources it lacked (merged) or is left alone (unchanged),
// so importing twice, or into a user who holds the memories already, changes nothing the second
// time. Otherwise the row is inserted with the memory's own created_at, valid_from and event
// time (created). Sources in sessions erased in this account are dropped first, and a memory
// left without sources is not restored: nothing re-creates erased data. A user erased as a whole
// is ErrTombstoned. event builds the outbox entry (memory_upserted) of each created or merged
// row, written in the same transaction so every index follows.
func (s *Store) ImportMemories(ctx context.Context, account, user string, mems []Memory, event func(Memory) OutboxEntry) ([]ImportResult, error) {
	if account == "" || user == "" {
		return nil, fmt.Errorf("import memories: account and user are required")
	}
	var out []ImportResult
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		out = out[:0]
		if tomb, err := s.tombstonedTx(ctx, tx, account, user, ""); err != nil {
			return err
		} else if tomb {
			return fmt.Errorf("import memories of %s/%s: %w", account, user, ErrTombstoned)
		}
		var events []OutboxEntry
		for _, m := range mems {
			if m.AccountID != account || m.UserID != user {
				return fmt.Errorf("import memory %s: it belongs to %s/%s, not %s/%s", m.ID, m.AccountID, m.UserID, account, user)
			}
			res, row, err := s.importMemory(ctx, tx, m)
			if err != nil {
				return err
			}
			out = append(out, res)
			if event != nil && (res.Outcome == ImportCreated || res.Outcome == ImportMerged) {
				events = append(events, event(row))
			}
		}
		return s.insertOutbox(ctx, tx, events)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// importMemory writes one memory in ImportMemories' transaction and returns the row as it is now.
func (s *Store) importMemory(ctx context.Context, tx *sql.Tx, m Memory) (ImportResult, Memory, error) {
	if len(m.Sources) > 0 {
		kept := m.Sources[:0:0]
		for _, src := range m.Sources {
			tomb, err := s.tombstonedTx(ctx, tx, m.AccountID, m.UserID, src.SessionID)
			if err != nil {
				return ImportResult{}, Memory{}, err
			}
			if !tomb {
				kept = append(kept, src)
			}
		}
		if len(kept) == 0 {
			return ImportResult{ID: m.ID, Outcome: ImportErased}, m, nil
		}
		m.Sources = kept
	}
	old, found, err := s.importMatch(ctx, tx, m)
	if err != nil {
		return ImportResult{}, Memory{}, err
	}
	now := s.nowUS()
	if !found {
		created := m.CreatedAt
		if created.IsZero() {
			created = s.now()
		}
		validFrom := m.ValidFrom
		if validFrom.IsZero() {
			validFrom = created
		}
		if err := insertMemoryRow(ctx, tx, m, validFrom.UnixMicro(), created.UnixMicro(), now); err != nil {
			return ImportResult{}, Memory{}, err
		}
		if err := s.insertSources(ctx, tx, m.ID, m.AccountID, m.Sources); err != nil {
			return ImportResult{}, Memory{}, err
		}
		return ImportResult{ID: m.ID, Outcome: ImportCreated}, m, nil
	}
	if !old.Active() {
		// The user superseded (or merged away) this fact since: an old export does not bring it back.
		return ImportResult{ID: old.ID, Outcome: ImportUnchanged}, old, nil
	}
	merged := sortSources(append(append([]Source(nil), old.Sources...), m.Sources...))
	if len(merged) == len(sortSources(old.Sources)) {
		return ImportResult{ID: old.ID, Outcome: ImportUnchanged}, old, nil
	}
	b, _ := json.Marshal(merged)
	if _, err := tx.ExecContext(ctx, "UPDATE memories SET sources = ?, updated_us = ? WHERE id = ?", string(b), now, old.ID); err != nil {
		return ImportResult{}, Memory{}, fmt.Errorf("merge memory %s: %w", old.ID, err)
	}
	if err := s.insertSources(ctx, tx, old.ID, old.AccountID, m.Sources); err != nil {
		return ImportResult{}, Memory{}, err
	}
	old.Sources = merged
	return ImportResult{ID: old.ID, Outcome: ImportMerged}, old, nil
}

// importMatch finds the row an imported memory is already: the same id, else an active row of
// the user with the same normalised text in the same category and scope (the same words filed
// under two categories stay two memories, as extraction left them). An id held by another tenant is an
// error: ids are derived per tenant, so that can only be a forged or mis-targeted record.
func (s *Store) importMatch(ctx context.Context, tx *sql.Tx, m Memory) (Memory, bool, error) {
	rows, err := tx.QueryContext(ctx, "SELECT "+memoryCols+" FROM memories WHERE id = ?"+s.forUpdate(), m.ID)
	if err != nil {
		return Memory{}, false, err
	}
	ms, err := scanMemories(rows)
	if err != nil {
		return Memory{}, false, err
	}
	if len(ms) > 0 {
		if ms[0].AccountID != m.AccountID || ms[0].UserID != m.UserID {
			return Memory{}, false, fmt.Errorf("import memory %s: the id is another user's memory", m.ID)
		}
		return ms[0], true, nil
	}
	if m.ContentHash == "" {
		return Memory{}, false, nil
	}
	rows, err = tx.QueryContext(ctx, "SELECT "+memoryCols+` FROM memories WHERE account_id = ? AND user_id = ? AND content_hash = ? AND category = ? AND scope = ? AND agent_id = ?
		AND valid_to_us IS NULL AND superseded_by IS NULL AND duplicate_of IS NULL ORDER BY id LIMIT 1`+s.forUpdate(),
		m.AccountID, m.UserID, m.ContentHash, m.Category, m.Scope, m.AgentID)
	if err != nil {
		return Memory{}, false, err
	}
	ms, err = scanMemories(rows)
	if err != nil || len(ms) == 0 {
		return Memory{}, false, err
	}
	return ms[0], true, nil
}

func (s *Store) insertSources(ctx context.Context, tx *sql.Tx, id, account string, srcs []Source) error {
	for _, src := range srcs {
		if _, err := tx.ExecContext(ctx, s.insertIgnore()+" memory_sources (memory_id, account_id, session_id, message_id) VALUES (?, ?, ?, ?)",
			id, account, src.SessionID, src.MessageID); err != nil {
			return fmt.Errorf("memory %s source %s/%s: %w", id, src.SessionID, src.MessageID, err)
		}
	}
	return nil
}
