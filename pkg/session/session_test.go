package session_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/membus/membus/pkg/metrics"
	"github.com/membus/membus/pkg/session"
	"github.com/membus/membus/pkg/session/sessiontest"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/testenv"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func openSQLite(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func openMySQL(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.OpenMySQL(context.Background(), testenv.MySQLDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestConformance(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		sessiontest.Run(t, func(t *testing.T) (session.Store, *store.Store) {
			st := openSQLite(t)
			return session.NewSQL(st), st
		})
	})
	// The cache's logic against an in-process Redis, so it runs everywhere; the real Redis
	// run below is the one that counts in CI.
	t.Run("sqlite+miniredis", func(t *testing.T) {
		sessiontest.Run(t, func(t *testing.T) (session.Store, *store.Store) {
			st := openSQLite(t)
			mr := miniredis.RunT(t)
			rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
			t.Cleanup(func() { rdb.Close() })
			return session.NewCached(st, rdb, "membus:", metrics.New("test", "t"), quiet), st
		})
	})
	t.Run("mariadb", func(t *testing.T) {
		sessiontest.Run(t, func(t *testing.T) (session.Store, *store.Store) {
			st := openMySQL(t)
			return session.NewSQL(st), st
		})
	})
	t.Run("mariadb+redis", func(t *testing.T) {
		sessiontest.Run(t, func(t *testing.T) (session.Store, *store.Store) {
			rdb, prefix := testenv.Redis(t)
			st := openMySQL(t)
			return session.NewCached(st, rdb, prefix, metrics.New("test", "t"), quiet), st
		})
	})
}
