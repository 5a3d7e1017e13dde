package store

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrBadCursor: a page cursor this store did not hand out (garbled, truncated, edited). Match
// it with errors.Is; callers answer it as the caller's mistake (HTTP 400), never a 500.
var ErrBadCursor = errors.New("bad cursor")

// memoryCursorVersion prefixes every cursor, so a later change of the sort key can tell its
// own cursors from these and reject the old ones clearly.
const memoryCursorVersion = "m1"

// maxCursorLen bounds what ParseMemoryCursor decodes (a cursor is about 70 characters).
const maxCursorLen = 256

// MemoryCursor is the sort key of the last memory of a page: (created_at, id), a total order
// that no write changes (created_us is set once; updated_us moves when a memory gains a
// source, so paging by it could skip or repeat rows). A memory inserted while a client pages
// sorts before or after the cursor; it never moves an existing memory across it.
type MemoryCursor struct {
	CreatedUS int64
	ID        string
}

// String is the opaque cursor the API hands out: base64url (no padding) of "m1.<created
// microseconds>.<id>". Clients must not build or parse it.
func (c MemoryCursor) String() string {
	return base64.RawURLEncoding.EncodeToString([]byte(memoryCursorVersion + "." + strconv.FormatInt(c.CreatedUS, 10) + "." + c.ID))
}

// ParseMemoryCursor reverses MemoryCursor.String; anything else is ErrBadCursor.
func ParseMemoryCursor(s string) (MemoryCursor, error) {
	bad := func(why string) (MemoryCursor, error) {
		return MemoryCursor{}, fmt.Errorf("%w: %s (pass the next_cursor of the previous page unchanged, or none for the first page)", ErrBadCursor, why)
	}
	if len(s) > maxCursorLen {
		return bad("too long")
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return bad("not base64url")
	}
	parts := strings.SplitN(string(b), ".", 3)
	if len(parts) != 3 || parts[0] != memoryCursorVersion {
		return bad("unknown format")
	}
	created, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || created < 0 {
		return bad("bad time")
	}
	if parts[2] == "" || len(parts[2]) > 64 {
		return bad("bad id")
	}
	return MemoryCursor{CreatedUS: created, ID: parts[2]}, nil
}

// MemoriesPage returns one page of the memories f selects in the stable paging order —
// created_at, then id, newest first — starting after cursor ("" for the first page), at most
// f.Limit of them (1 when unset). next is the cursor of the following page, "" when this page
// is the last. The keyset condition runs on the memories_page index (account, user,
// created_us, id): no OFFSET, so page n costs what page 1 does. A bad cursor is ErrBadCursor.
func (s *Store) MemoriesPage(ctx context.Context, f MemoryFilter, cursor string) (ms []Memory, next string, err error) {
	where, args, err := f.where()
	if err != nil {
		return nil, "", err
	}
	if cursor != "" {
		c, err := ParseMemoryCursor(cursor)
		if err != nil {
			return nil, "", err
		}
		where += " AND (created_us < ? OR (created_us = ? AND id < ?))"
		args = append(args, c.CreatedUS, c.CreatedUS, c.ID)
	}
	limit := max(f.Limit, 1)
	// One row more than the page tells whether another page follows, so the last page never
	// hands out a cursor that leads to an empty page.
	q := "SELECT " + memoryCols + " FROM memories WHERE " + where + fmt.Sprintf(" ORDER BY created_us DESC, id DESC LIMIT %d", limit+1)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, "", err
	}
	ms, err = scanMemories(rows)
	if err != nil {
		return nil, "", err
	}
	if len(ms) > limit {
		ms = ms[:limit]
		last := ms[len(ms)-1]
		next = MemoryCursor{CreatedUS: last.CreatedAt.UnixMicro(), ID: last.ID}.String()
	}
	return ms, next, nil
}
