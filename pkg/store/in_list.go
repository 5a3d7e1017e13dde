package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// inList returns "column IN <values>" and its arguments for a read that looks up a list of
// values (len(values) > 0). On SQLite the values travel as one JSON array read by json_each,
// so the statement's text is the same whatever the list's length and query runs it through a
// statement prepared once per connection: parsing and planning a fresh IN list of about a
// hundred placeholders was a fifth of recall's read of its hit rows. A value that is not
// valid UTF-8 (which JSON would change) keeps the IN list. On MySQL, whose driver interpolates
// the arguments on the client, it is always the IN list.
func (s *Store) inList(column string, values []string) (string, []any) {
	if s.dialect == SQLite && allValidUTF8(values) {
		b, _ := json.Marshal(values) // strings only: cannot fail
		return column + " IN (SELECT value FROM json_each(?))", []any{string(b)}
	}
	args := make([]any, len(values))
	for i, v := range values {
		args[i] = v
	}
	return column + " IN (?" + strings.Repeat(",?", len(values)-1) + ")", args
}

func allValidUTF8(values []string) bool {
	for _, v := range values {
		if !utf8.ValidString(v) {
			return false
		}
	}
	return true
}

// query runs a read. On SQLite it goes through a statement prepared once (per connection, by
// database/sql) and kept until Close: for reads whose text does not vary, on the hot path
// (inList). MySQL's driver interpolates arguments itself, so a read there is one round trip
// without preparing.
func (s *Store) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if s.dialect != SQLite {
		return s.db.QueryContext(ctx, q, args...)
	}
	st, err := s.prepared(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// prepared returns the statement of q, preparing it on first use.
func (s *Store) prepared(ctx context.Context, q string) (*sql.Stmt, error) {
	if st, ok := s.stmts.Load(q); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := s.db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	if prev, loaded := s.stmts.LoadOrStore(q, st); loaded {
		_ = st.Close()
		return prev.(*sql.Stmt), nil
	}
	return st, nil
}
