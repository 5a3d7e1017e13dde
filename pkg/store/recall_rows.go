package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"time"
	"unicode/utf8"
)

// RecallRow is what recall reads of a memory its index search found: the fields it scores,
// places among the messages and shows. Everything else of the row (the embedding blob above
// all: recall scores with the vectors its index holds) stays in SQL.
type RecallRow struct {
	ID        string
	Scope     string
	Category  string
	Abstract  string
	Text      string
	Sources   []Source
	EventTime *time.Time
	CreatedAt time.Time
}

// recallRowCols are RecallRow's columns, then whether the row is the given user's (two
// arguments: account, user) and active; a foreign or inactive row is read but not kept.
const recallRowCols = `id, scope, category, abstract, text, sources, event_us, created_us,
	(account_id = ? AND user_id = ? AND valid_to_us IS NULL AND superseded_by IS NULL AND duplicate_of IS NULL)`

// RecallRows loads the active memories of one user among ids: a missing, foreign, superseded,
// duplicate or expired one is left out (recall drops those hits, even while their index delete
// is pending). It reads the ten columns recall uses rather than the row's 25.
func (s *Store) RecallRows(ctx context.Context, account, user string, ids []string) ([]RecallRow, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	// The primary key alone selects the rows (see MemoriesByID); the tenant and the activity
	// are a column of the result.
	in, inArgs := s.inList("id", ids)
	args := append([]any{account, user}, inArgs...)
	rows, err := s.query(ctx, "SELECT "+recallRowCols+" FROM "+s.recallRowsFrom()+" WHERE "+in, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	// Each row is scanned into its place in out (a row scanned into a local would escape to
	// the heap, one allocation a row); a row not kept gives its place back.
	out := make([]RecallRow, 0, len(ids))
	var src sql.RawBytes
	var ev sql.NullInt64
	var created int64
	var keep bool
	for rows.Next() {
		out = append(out, RecallRow{})
		r := &out[len(out)-1]
		if err := rows.Scan(&r.ID, &r.Scope, &r.Category, &r.Abstract, &r.Text, &src, &ev, &created, &keep); err != nil {
			return nil, err
		}
		if !keep {
			out = out[:len(out)-1]
			continue
		}
		r.Sources = decodeSources(src)
		if ev.Valid {
			t := time.UnixMicro(ev.Int64).UTC()
			r.EventTime = &t
		}
		r.CreatedAt = time.UnixMicro(created).UTC()
	}
	return out, rows.Err()
}

// recallRowsFrom is RecallRows' table. On SQLite the read names the index that holds every
// column it reads (migration 007, memories_recall): the planner would take the primary key's,
// which is unique, and read each row's page from the table, about 2 KB a row with its
// embedding, at random. MySQL reads the row from the primary key's own b-tree.
func (s *Store) recallRowsFrom() string {
	if s.dialect == SQLite {
		return "memories INDEXED BY memories_recall"
	}
	return "memories"
}

// decodeSources decodes a memory's sources column as json.Unmarshal does (malformed JSON
// gives what Unmarshal leaves, nil or a prefix). The column is written by json.Marshal of
// sorted sources: a list of {"session_id":…,"message_id":…} without spaces. A list in
// exactly that form whose strings have no escapes is read directly, without the reflection
// of encoding/json (a fifth of recall's read of its hit rows); anything else goes to
// json.Unmarshal.
func decodeSources(b []byte) []Source {
	if out, ok := decodeSourcesPlain(b); ok {
		return out
	}
	var out []Source
	_ = json.Unmarshal(b, &out)
	return out
}

// decodeSourcesPlain reads b when it is exactly json.Marshal's form of a non-empty []Source
// with no escape in it (ok false otherwise, and for anything else).
func decodeSourcesPlain(b []byte) ([]Source, bool) {
	const (
		open = `{"session_id":"`
		mid  = `","message_id":"`
		end  = `"}`
	)
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' || bytes.IndexByte(b, '\\') >= 0 {
		return nil, false
	}
	rest := b[1 : len(b)-1]
	out := make([]Source, 0, 1+bytes.Count(rest, []byte(`},{`)))
	for {
		var src Source
		var ok bool
		if rest, ok = bytes.CutPrefix(rest, []byte(open)); !ok {
			return nil, false
		}
		i := bytes.IndexByte(rest, '"')
		if i < 0 || !validPlain(rest[:i]) {
			return nil, false
		}
		src.SessionID = string(rest[:i])
		if rest, ok = bytes.CutPrefix(rest[i:], []byte(mid)); !ok {
			return nil, false
		}
		i = bytes.IndexByte(rest, '"')
		if i < 0 || !validPlain(rest[:i]) {
			return nil, false
		}
		src.MessageID = string(rest[:i])
		if rest, ok = bytes.CutPrefix(rest[i:], []byte(end)); !ok {
			return nil, false
		}
		out = append(out, src)
		if len(rest) == 0 {
			return out, true
		}
		if rest, ok = bytes.CutPrefix(rest, []byte{','}); !ok {
			return nil, false
		}
	}
}

// validPlain reports whether s may stand between quotes in JSON as it is and be read back
// unchanged: valid UTF-8 without control characters (json.Unmarshal replaces invalid UTF-8).
func validPlain(s []byte) bool {
	for _, c := range s {
		if c < 0x20 {
			return false
		}
	}
	return utf8.Valid(s)
}
