// Package outbox is the transactional outbox's shared vocabulary (docs/design.md §5): a row
// written in the same SQL transaction as the change it announces, and the store the relay
// claims rows from. pkg/store implements Store; pkg/bus relays the rows to JetStream. Neither
// imports the other.
package outbox

import (
	"context"
	"errors"
	"time"
)

// Row is one event written in the same SQL transaction as the change it announces. Its ID is
// deterministic and is also the message's Nats-Msg-Id, so a republished row is deduplicated.
type Row struct {
	ID        string
	Subject   string
	Payload   []byte
	CreatedAt time.Time
	Attempts  int
}

// ErrUnpublishable marks a row that can never be published (payload over the server's max
// payload, invalid subject, no stream for the subject): the relay dead-letters it.
var ErrUnpublishable = errors.New("unpublishable")

// Store is the SQL side of the transactional outbox.
type Store interface {
	// Claim takes up to limit unsent rows that no other claim holds (SELECT … FOR UPDATE SKIP
	// LOCKED on MySQL; on SQLite, one claim of the process at a time), calls fn for each in
	// order, marks sent those fn returned nil for, marks dead (with the error text) those fn
	// returned an error wrapping ErrUnpublishable for, stops at the first other error (leaving
	// the rest unsent) and returns how many were marked. With subjects, only rows whose subject starts with one
	// of them are claimed (a relay claims what its NATS user may publish); nil claims every row.
	Claim(ctx context.Context, limit int, subjects []string, fn func(ctx context.Context, row Row) error) (int, error)
	// Prune deletes rows sent before sentBefore and returns how many.
	Prune(ctx context.Context, sentBefore time.Time) (int, error)
}
