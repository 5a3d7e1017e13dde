package lock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a Locker on Redis leases: SET key token NX PX ttl, refreshed at ttl/3 with a
// compare-and-extend script, released with compare-and-delete, so only the holder's token
// can extend or free the lock.
type Redis struct {
	c      redis.UniversalClient
	prefix string
}

// NewRedis returns a Redis Locker; prefix namespaces the keys (deployments sharing a Redis).
func NewRedis(c redis.UniversalClient, prefix string) *Redis { return &Redis{c: c, prefix: prefix} }

var (
	releaseScript = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) else return 0 end`)
	extendScript  = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("PEXPIRE", KEYS[1], ARGV[2]) else return 0 end`)
)

type redisLease struct {
	r      *Redis
	key    string
	token  string
	ctx    context.Context
	cancel context.CancelFunc
	stop   chan struct{}
	once   sync.Once
}

// Acquire implements Locker.
func (r *Redis) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	token := hex.EncodeToString(b)
	k := r.prefix + key
	ok, err := r.c.SetNX(ctx, k, token, ttl).Result()
	if err != nil {
		return nil, fmt.Errorf("acquire %s: %w", key, err)
	}
	if !ok {
		return nil, ErrBusy
	}
	lctx, cancel := context.WithCancel(ctx)
	ls := &redisLease{r: r, key: k, token: token, ctx: lctx, cancel: cancel, stop: make(chan struct{})}
	go ls.refresh(ttl)
	return ls, nil
}

func (ls *redisLease) refresh(ttl time.Duration) {
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
			ctx, cancel := context.WithTimeout(context.Background(), ttl/3)
			n, err := extendScript.Run(ctx, ls.r.c, []string{ls.key}, ls.token, ttl.Milliseconds()).Int()
			cancel()
			if err != nil || n == 0 {
				// Lost (expired and maybe taken) or unreachable: stop the work done under it.
				ls.cancel()
				return
			}
		}
	}
}

func (ls *redisLease) Context() context.Context { return ls.ctx }

func (ls *redisLease) Release(ctx context.Context) error {
	var err error
	ls.once.Do(func() {
		close(ls.stop)
		ls.cancel()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_, err = releaseScript.Run(rctx, ls.r.c, []string{ls.key}, ls.token).Int()
		if errors.Is(err, redis.Nil) {
			err = nil
		}
	})
	return err
}
