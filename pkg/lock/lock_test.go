package lock_test

import (
	"context"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/membus/membus/pkg/lock"
	"github.com/membus/membus/pkg/lock/locktest"
	"github.com/membus/membus/pkg/testenv"
	"github.com/redis/go-redis/v9"
)

func TestLocal(t *testing.T) {
	var l *lock.Local
	locktest.Run(t, func(t *testing.T) lock.Locker { l = lock.NewLocal(); return l }, func(t *testing.T, key string) {
		l.Expire(key)
	})
}

func TestRedisMiniredis(t *testing.T) {
	var c *redis.Client
	locktest.Run(t, func(t *testing.T) lock.Locker {
		m := miniredis.RunT(t)
		c = redis.NewClient(&redis.Options{Addr: m.Addr()})
		t.Cleanup(func() { c.Close() })
		return lock.NewRedis(c, "t:")
	}, func(t *testing.T, key string) { c.Del(context.Background(), "t:"+key) })
}

func TestRedisReal(t *testing.T) {
	var c *redis.Client
	var prefix string
	locktest.Run(t, func(t *testing.T) lock.Locker {
		c, prefix = testenv.Redis(t)
		return lock.NewRedis(c, prefix)
	}, func(t *testing.T, key string) { c.Del(context.Background(), prefix+key) })
}
