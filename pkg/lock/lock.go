// Package lock provides leases with fencing: a Redis lease for distributed deployments and an
// in-process one for embedded mode, behind one interface and one conformance suite
// (locktest). A lease's context is cancelled when the lease is lost, so work done under it
// stops; SQL state transitions are additionally fenced by the session epoch (pkg/store).
package lock

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// ErrBusy means another holder has the lock; the caller retries later (bus.Busy).
var ErrBusy = errors.New("lock busy")

// Locker hands out exclusive leases on keys.
type Locker interface {
	// Acquire takes key for ttl, refreshing it at ttl/3 until released or lost. It fails at
	// once with ErrBusy when another holder has it. The lease's Context is derived from ctx.
	Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error)
}

// Lease is one held lock.
type Lease interface {
	// Context is cancelled when the lease is lost (refresh failed or expired) or released.
	Context() context.Context
	// Release gives the lock back if it is still ours (compare-and-delete).
	Release(ctx context.Context) error
}

// Keys of the locks membus takes.
func SessionKey(account, session string) string { return "lock:session:" + account + ":" + session }

// MergeKey is the short (account, user) lock around conflict resolution and dedup.
func MergeKey(account, user string) string { return "lock:merge:" + account + ":" + user }

// Default lease lengths (docs/design.md §5).
const (
	SessionTTL = 10 * time.Minute
	MergeTTL   = 30 * time.Second
)

// Release gives l back when the work under it is done (defer lock.Release(ctx, l, log)). A
// failed release is logged and otherwise harmless: the lease expires after its TTL, and the
// session epoch fences any write made after that.
func Release(ctx context.Context, l Lease, log *slog.Logger) {
	if err := l.Release(ctx); err != nil {
		log.Warn("release lock; it expires after its TTL", "err", err)
	}
}
