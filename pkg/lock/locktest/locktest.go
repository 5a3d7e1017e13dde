// Package locktest is the conformance suite every lock.Locker passes.
package locktest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/membus/membus/pkg/lock"
)

// Run runs the suite. expire, when not nil, makes the lease on key vanish as if its TTL had
// passed without refresh (a paused holder), to check that the holder's context is cancelled.
func Run(t *testing.T, newLocker func(t *testing.T) lock.Locker, expire func(t *testing.T, key string)) {
	ctx := context.Background()
	t.Run("second acquire is busy until release", func(t *testing.T) {
		l := newLocker(t)
		a, err := l.Acquire(ctx, "k1", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Acquire(ctx, "k1", time.Second); !errors.Is(err, lock.ErrBusy) {
			t.Fatalf("second acquire: %v, want ErrBusy", err)
		}
		if err := a.Release(ctx); err != nil {
			t.Fatal(err)
		}
		b, err := l.Acquire(ctx, "k1", time.Second)
		if err != nil {
			t.Fatalf("acquire after release: %v", err)
		}
		b.Release(ctx)
	})
	t.Run("different keys do not block", func(t *testing.T) {
		l := newLocker(t)
		a, err := l.Acquire(ctx, "ka", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Release(ctx)
		b, err := l.Acquire(ctx, "kb", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		b.Release(ctx)
	})
	t.Run("refresh keeps the lease past its ttl", func(t *testing.T) {
		l := newLocker(t)
		a, err := l.Acquire(ctx, "k2", 300*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Release(ctx)
		time.Sleep(700 * time.Millisecond)
		if a.Context().Err() != nil {
			t.Fatal("lease lost although refreshed")
		}
		if _, err := l.Acquire(ctx, "k2", time.Second); !errors.Is(err, lock.ErrBusy) {
			t.Fatalf("acquire while refreshed: %v, want ErrBusy", err)
		}
	})
	t.Run("release cancels the lease context", func(t *testing.T) {
		l := newLocker(t)
		a, err := l.Acquire(ctx, "k3", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		a.Release(ctx)
		select {
		case <-a.Context().Done():
		case <-time.After(time.Second):
			t.Fatal("context not cancelled by release")
		}
	})
	t.Run("mutual exclusion under contention", func(t *testing.T) {
		l := newLocker(t)
		var inside, max atomic.Int32
		var wg sync.WaitGroup
		var got atomic.Int32
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := 0; j < 20; j++ {
					ls, err := l.Acquire(ctx, "k4", time.Second)
					if errors.Is(err, lock.ErrBusy) {
						time.Sleep(time.Millisecond)
						continue
					}
					if err != nil {
						t.Error(err)
						return
					}
					got.Add(1)
					if n := inside.Add(1); n > max.Load() {
						max.Store(n)
					}
					time.Sleep(time.Millisecond)
					inside.Add(-1)
					ls.Release(ctx)
				}
			}()
		}
		wg.Wait()
		if max.Load() > 1 {
			t.Fatalf("%d holders at once", max.Load())
		}
		if got.Load() == 0 {
			t.Fatal("nobody got the lock")
		}
	})
	if expire != nil {
		t.Run("lost lease cancels the holder's context", func(t *testing.T) {
			l := newLocker(t)
			a, err := l.Acquire(ctx, "k5", 300*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			expire(t, "k5")
			b, err := l.Acquire(ctx, "k5", time.Second)
			if err != nil {
				t.Fatalf("acquire after expiry: %v", err)
			}
			defer b.Release(ctx)
			select {
			case <-a.Context().Done():
			case <-time.After(2 * time.Second):
				t.Fatal("old holder's context not cancelled after losing the lease")
			}
			// The old holder's release must not free the new holder's lock.
			a.Release(ctx)
			if _, err := l.Acquire(ctx, "k5", time.Second); !errors.Is(err, lock.ErrBusy) {
				t.Fatalf("old holder released the new holder's lock: %v", err)
			}
		})
	}
}
