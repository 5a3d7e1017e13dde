package lock

import (
	"context"
	"sync"
	"time"
)

// Local is the in-process Locker for embedded mode (one process holds every lock).
type Local struct {
	mu   sync.Mutex
	held map[string]*localLease
	now  func() time.Time
}

// NewLocal returns an in-process Locker.
func NewLocal() *Local { return &Local{held: map[string]*localLease{}, now: time.Now} }

type localLease struct {
	l       *Local
	key     string
	expires time.Time
	ctx     context.Context
	cancel  context.CancelFunc
	stop    chan struct{}
	once    sync.Once
}

// Acquire implements Locker. An expired lease (its holder stopped refreshing) may be taken over.
func (l *Local) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if cur, ok := l.held[key]; ok && l.now().Before(cur.expires) && cur.ctx.Err() == nil {
		return nil, ErrBusy
	} else if ok {
		cur.cancel()
	}
	lctx, cancel := context.WithCancel(ctx)
	ls := &localLease{l: l, key: key, expires: l.now().Add(ttl), ctx: lctx, cancel: cancel, stop: make(chan struct{})}
	l.held[key] = ls
	go ls.refresh(ttl)
	return ls, nil
}

func (ls *localLease) refresh(ttl time.Duration) {
	t := time.NewTicker(ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-ls.stop:
			return
		case <-ls.ctx.Done():
			// The lease is lost or its holder gave up: releasing is best effort, the TTL frees it otherwise.
			_ = ls.Release(context.Background())
			return
		case <-t.C:
			ls.l.mu.Lock()
			if ls.l.held[ls.key] != ls {
				ls.l.mu.Unlock()
				ls.cancel()
				return
			}
			ls.expires = ls.l.now().Add(ttl)
			ls.l.mu.Unlock()
		}
	}
}

func (ls *localLease) Context() context.Context { return ls.ctx }

func (ls *localLease) Release(context.Context) error {
	ls.once.Do(func() {
		close(ls.stop)
		ls.l.mu.Lock()
		if ls.l.held[ls.key] == ls {
			delete(ls.l.held, ls.key)
		}
		ls.l.mu.Unlock()
		ls.cancel()
	})
	return nil
}

// Expire drops key's lease as if its holder had stopped refreshing past the TTL (tests of
// lease loss; the holder's context is cancelled at its next refresh).
func (l *Local) Expire(key string) {
	l.mu.Lock()
	delete(l.held, key)
	l.mu.Unlock()
}
