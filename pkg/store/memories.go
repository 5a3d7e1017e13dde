package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"
)

// Memory is a long-term memory row.
type Memory struct {
	ID           string
	AccountID    string
	UserID       string
	AgentID      string
	Scope        string
	Category     string
	Subject      string
	Attribute    string
	Polarity     int
	Value        string
	Abstract     string
	Text         string
	Importance   float64
	Sources      []Source
	EventTime    *time.Time
	ValidFrom    time.Time
	ValidTo      *time.Time
	SupersededBy string
	DuplicateOf  string
	AccessCount  int64
	ContentHash  string
	Embedding    []float32
	EmbedModel   string
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// Source is one message a memory was stated in (its provenance).
type Source struct {
	SessionID string `json:"session_id"`
	MessageID string `json:"message_id"`
}

// Active reports whether the memory is current (not superseded, not a duplicate).
func (m Memory) Active() bool { return m.ValidTo == nil && m.SupersededBy == "" && m.DuplicateOf == "" }

// SourceIDs returns the message ids of the sources.
func (m Memory) SourceIDs() []string {
	out := make([]string, 0, len(m.Sources))
	for _, s := range m.Sources {
		out = append(out, s.MessageID)
	}
	return out
}

// SaveMemories upserts extracted memories for an archive and moves it from archived to
// extracted, fenced by epoch, in one transaction. A memory whose id exists already (a replay,
// a repeated fact) gets the union of the sources and is reactivated if it had been
// superseded (Boston → Denver → Boston): it is never written twice.
func (s *Store) SaveMemories(ctx context.Context, epoch int64, a Archive, mems []Memory, supersede map[string]string, events []OutboxEntry) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := s.checkEpoch(ctx, tx, a.AccountID, a.SessionID, epoch); err != nil {
			return err
		}
		var state string
		if err := tx.QueryRowContext(ctx, "SELECT state FROM archives WHERE id = ?", a.ID).Scan(&state); err != nil {
			return fmt.Errorf("archive %s: %w", a.ID, err)
		}
		if state != StateArchived {
			return nil // already extracted: a replay
		}
		counts := map[string]int{}
		for _, m := range mems {
			if err := s.upsertMemory(ctx, tx, m); err != nil {
				return err
			}
			counts[m.Category]++
		}
		// Conflicts: the new memory is written first (above), then the old one superseded.
		now := s.nowUS()
		for oldID, newID := range supersede {
			if _, err := tx.ExecContext(ctx, "UPDATE memories SET valid_to_us = ?, superseded_by = ?, updated_us = ? WHERE id = ? AND account_id = ? AND superseded_by IS NULL",
				now, newID, now, oldID, a.AccountID); err != nil {
				return err
			}
		}
		if err := s.setArchiveMemories(ctx, tx, a.ID, counts); err != nil {
			return err
		}
		// a.Abstract is extract's first abstract, so a synchronous commit can answer with one;
		// the summarizer replaces it with the cumulative overview's abstract later.
		if _, err := tx.ExecContext(ctx, "UPDATE archives SET state = ?, abstract = CASE WHEN abstract IS NULL OR abstract = '' THEN ? ELSE abstract END, updated_us = ? WHERE id = ?",
			StateExtracted, a.Abstract, now, a.ID); err != nil {
			return err
		}
		return s.insertOutbox(ctx, tx, events)
	})
}

func (s *Store) upsertMemory(ctx context.Context, tx *sql.Tx, m Memory) error {
	var srcJSON string
	err := tx.QueryRowContext(ctx, "SELECT sources FROM memories WHERE id = ?"+s.forUpdate(), m.ID).Scan(&srcJSON)
	now := s.nowUS()
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if err := insertMemoryRow(ctx, tx, m, m.ValidFrom.UnixMicro(), now, now); err != nil {
			return err
		}
	case err != nil:
		return err
	default:
		var old []Source
		_ = json.Unmarshal([]byte(srcJSON), &old)
		merged, _ := json.Marshal(sortSources(append(old, m.Sources...)))
		if _, err := tx.ExecContext(ctx, `UPDATE memories SET sources = ?, valid_to_us = NULL, superseded_by = NULL, duplicate_of = NULL, updated_us = ? WHERE id = ?`,
			string(merged), now, m.ID); err != nil {
			return err
		}
	}
	return s.insertSources(ctx, tx, m.ID, m.AccountID, m.Sources)
}

// insertMemoryRow inserts m's row with the given valid-from, created and updated times
// (microseconds).
func insertMemoryRow(ctx context.Context, tx *sql.Tx, m Memory, validFromUS, createdUS, updatedUS int64) error {
	src, _ := json.Marshal(sortSources(m.Sources))
	if _, err := tx.ExecContext(ctx, `INSERT INTO memories (id, account_id, user_id, agent_id, scope, category, subject, attribute, polarity,
		value, abstract, text, importance, sources, event_us, valid_from_us, content_hash, embedding, embed_model, created_us, updated_us)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		m.ID, m.AccountID, m.UserID, m.AgentID, m.Scope, m.Category, m.Subject, m.Attribute, m.Polarity,
		m.Value, m.Abstract, m.Text, m.Importance, string(src), timeUS(m.EventTime), validFromUS,
		m.ContentHash, EncodeVector(m.Embedding), m.EmbedModel, createdUS, updatedUS); err != nil {
		return fmt.Errorf("insert memory %s: %w", m.ID, err)
	}
	return nil
}

func sortSources(in []Source) []Source {
	seen := map[Source]bool{}
	out := make([]Source, 0, len(in))
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].SessionID != out[j].SessionID {
			return out[i].SessionID < out[j].SessionID
		}
		return out[i].MessageID < out[j].MessageID
	})
	return out
}

const memoryCols = `id, account_id, user_id, agent_id, scope, category, subject, attribute, polarity, value, abstract, text, importance,
	sources, event_us, valid_from_us, valid_to_us, superseded_by, duplicate_of, access_count, content_hash, embedding, embed_model, created_us, updated_us`

func scanMemories(rows *sql.Rows) ([]Memory, error) {
	defer rows.Close()
	var out []Memory
	for rows.Next() {
		var m Memory
		var src string
		var ev, vt sql.NullInt64
		var sup, dup sql.NullString
		var emb []byte
		var vf, c, u int64
		if err := rows.Scan(&m.ID, &m.AccountID, &m.UserID, &m.AgentID, &m.Scope, &m.Category, &m.Subject, &m.Attribute, &m.Polarity,
			&m.Value, &m.Abstract, &m.Text, &m.Importance, &src, &ev, &vf, &vt, &sup, &dup, &m.AccessCount, &m.ContentHash,
			&emb, &m.EmbedModel, &c, &u); err != nil {
			return nil, err
		}
		m.Sources = decodeSources([]byte(src))
		if ev.Valid {
			t := time.UnixMicro(ev.Int64).UTC()
			m.EventTime = &t
		}
		if vt.Valid {
			t := time.UnixMicro(vt.Int64).UTC()
			m.ValidTo = &t
		}
		m.SupersededBy, m.DuplicateOf = sup.String, dup.String
		m.Embedding = DecodeVector(emb)
		m.ValidFrom, m.CreatedAt, m.UpdatedAt = time.UnixMicro(vf).UTC(), time.UnixMicro(c).UTC(), time.UnixMicro(u).UTC()
		out = append(out, m)
	}
	return out, rows.Err()
}

// MemoryFilter selects memories of one user.
type MemoryFilter struct {
	AccountID  string
	UserID     string
	AgentID    string
	Scope      string
	Category   string
	NoDigests  bool // leave out the summarizer's period digests (category digest)
	ActiveOnly bool
	Limit      int
	Since      *time.Time // created at or after (nil: open)
	Until      *time.Time // created before (nil: open)
}

// where is the WHERE clause (without the keyword) of f and its arguments.
func (f MemoryFilter) where() (string, []any, error) {
	if f.AccountID == "" || f.UserID == "" {
		return "", nil, fmt.Errorf("memories: account and user are required")
	}
	q := "account_id = ? AND user_id = ?"
	args := []any{f.AccountID, f.UserID}
	if f.AgentID != "" {
		q += " AND (agent_id = ? OR scope = 'user')"
		args = append(args, f.AgentID)
	}
	if f.Scope != "" {
		q += " AND scope = ?"
		args = append(args, f.Scope)
	}
	if f.Category != "" {
		q += " AND category = ?"
		args = append(args, f.Category)
	}
	if f.NoDigests {
		q += " AND category <> 'digest'"
	}
	if f.Since != nil {
		q += " AND created_us >= ?"
		args = append(args, f.Since.UnixMicro())
	}
	if f.Until != nil {
		q += " AND created_us < ?"
		args = append(args, f.Until.UnixMicro())
	}
	if f.ActiveOnly {
		q += " AND valid_to_us IS NULL AND superseded_by IS NULL AND duplicate_of IS NULL"
	}
	return q, args, nil
}

// Memories lists a user's memories, most recently changed first.
func (s *Store) Memories(ctx context.Context, f MemoryFilter) ([]Memory, error) {
	where, args, err := f.where()
	if err != nil {
		return nil, err
	}
	q := "SELECT " + memoryCols + " FROM memories WHERE " + where + " ORDER BY updated_us DESC, id"
	if f.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return scanMemories(rows)
}

// MemoriesByID loads the given memories of one user (missing or foreign ids are left out).
func (s *Store) MemoriesByID(ctx context.Context, account, user string, ids []string) ([]Memory, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	// The primary key alone selects the rows; the tenant is checked below. With the tenant in
	// the WHERE clause SQLite (no ANALYZE statistics) walks the (account_id, user_id) index,
	// every memory of the user, instead of looking the ids up.
	in, args := s.inList("id", ids)
	rows, err := s.query(ctx, "SELECT "+memoryCols+" FROM memories WHERE "+in, args...)
	if err != nil {
		return nil, err
	}
	ms, err := scanMemories(rows)
	if err != nil {
		return nil, err
	}
	own := ms[:0]
	for _, m := range ms {
		if m.AccountID == account && m.UserID == user {
			own = append(own, m)
		}
	}
	return own, nil
}

// GetMemory loads one memory of a user; ErrNotFound for a missing or foreign id.
func (s *Store) GetMemory(ctx context.Context, account, user, id string) (Memory, error) {
	ms, err := s.MemoriesByID(ctx, account, user, []string{id})
	if err != nil {
		return Memory{}, err
	}
	if len(ms) == 0 {
		return Memory{}, ErrNotFound
	}
	return ms[0], nil
}

// DeleteMemory removes one memory of a user and queues events; ErrNotFound when it is not theirs.
func (s *Store) DeleteMemory(ctx context.Context, account, user, id string, events []OutboxEntry) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "DELETE FROM memories WHERE id = ? AND account_id = ? AND user_id = ?", id, account, user)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotFound
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM memory_sources WHERE memory_id = ? AND account_id = ?", id, account); err != nil {
			return err
		}
		return s.insertOutbox(ctx, tx, events)
	})
}

// SessionMemoryCounts counts the active memories sourced from a session, by category.
func (s *Store) SessionMemoryCounts(ctx context.Context, account, session string) (map[string]int, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT m.category, COUNT(DISTINCT m.id) FROM memories m
		JOIN memory_sources ms ON ms.memory_id = m.id AND ms.account_id = m.account_id
		WHERE ms.account_id = ? AND ms.session_id = ? AND m.valid_to_us IS NULL AND m.superseded_by IS NULL AND m.duplicate_of IS NULL
		GROUP BY m.category`, account, session)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var c string
		var n int
		if err := rows.Scan(&c, &n); err != nil {
			return nil, err
		}
		out[c] = n
	}
	return out, rows.Err()
}

// embeddedActive selects the active memories with an embedding of the model bound to it.
const embeddedActive = `embed_model = ? AND valid_to_us IS NULL AND superseded_by IS NULL AND duplicate_of IS NULL`

// EmbeddedIDs returns the ids of EachEmbedding's memories, without reading the rows: whether
// the local vector store agrees with SQL is decided on them at every start.
func (s *Store) EmbeddedIDs(ctx context.Context, model string) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT id FROM memories WHERE "+embeddedActive, model)
	if err != nil {
		return nil, err
	}
	return scanStrings(rows)
}

// scanStrings reads a one-column result of strings and closes it.
func scanStrings(rows *sql.Rows) ([]string, error) {
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// EachEmbedding streams every active memory with an embedding of the given model, in id
// order (the local vector store rebuilds from it).
func (s *Store) EachEmbedding(ctx context.Context, model string, fn func(Memory) error) error {
	after := ""
	for {
		rows, err := s.db.QueryContext(ctx, "SELECT "+memoryCols+` FROM memories WHERE id > ? AND `+embeddedActive+` ORDER BY id LIMIT 500`, after, model)
		if err != nil {
			return err
		}
		ms, err := scanMemories(rows)
		if err != nil {
			return err
		}
		if len(ms) == 0 {
			return nil
		}
		for _, m := range ms {
			if err := fn(m); err != nil {
				return err
			}
		}
		after = ms[len(ms)-1].ID
	}
}

// ToReembed is a memory whose stored embedding is of another model than the one the data is
// moving onto (membus reembed): its id and the text its embedding is made from.
type ToReembed struct {
	ID, AccountID, Text string
}

// OtherEmbeddings returns up to n memories, in any state, whose stored embedding is of another
// model than model, in id order after the id after: what `membus reembed` embeds again.
func (s *Store) OtherEmbeddings(ctx context.Context, model, after string, n int) ([]ToReembed, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, account_id, text FROM memories
		WHERE id > ? AND embedding IS NOT NULL AND LENGTH(embedding) > 0 AND COALESCE(embed_model, '') <> ? ORDER BY id LIMIT ?`, after, model, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ToReembed
	for rows.Next() {
		var m ToReembed
		if err := rows.Scan(&m.ID, &m.AccountID, &m.Text); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// CountOtherEmbeddings counts OtherEmbeddings' memories.
func (s *Store) CountOtherEmbeddings(ctx context.Context, model string) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM memories WHERE embedding IS NOT NULL AND LENGTH(embedding) > 0 AND COALESCE(embed_model, '') <> ?`, model).Scan(&n)
	return n, err
}

// SetEmbeddings writes vecs[i] as the embedding of mems[i], of model, in one transaction. Only
// the embedding changes: the memory's text, state and updated time are its own.
func (s *Store) SetEmbeddings(ctx context.Context, model string, mems []ToReembed, vecs [][]float32) error {
	if len(mems) != len(vecs) {
		return fmt.Errorf("set embeddings: %d memories, %d vectors", len(mems), len(vecs))
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		for i, m := range mems {
			if _, err := tx.ExecContext(ctx, "UPDATE memories SET embedding = ?, embed_model = ? WHERE account_id = ? AND id = ?",
				EncodeVector(vecs[i]), model, m.AccountID, m.ID); err != nil {
				return err
			}
		}
		return nil
	})
}

// EncodeVector stores a float32 vector as little-endian bytes.
func EncodeVector(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

// DecodeVector is EncodeVector's inverse.
func DecodeVector(b []byte) []float32 {
	if len(b) == 0 {
		return nil
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

func timeUS(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UnixMicro()
}
