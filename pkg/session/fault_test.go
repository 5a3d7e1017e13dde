package session_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/membus/membus/pkg/metrics"
	"github.com/membus/membus/pkg/session"
	"github.com/membus/membus/pkg/session/sessiontest"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/testenv"
)

// proxy is an in-process TCP proxy in front of the shared Redis: cutting it breaks this
// test's link without stopping the server other tests use.
type proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]bool
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	go p.serve()
	t.Cleanup(func() { ln.Close(); p.setCut(true) })
	return p
}

func (p *proxy) Addr() string { return p.ln.Addr().String() }

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.pipe(c)
	}
}

func (p *proxy) pipe(c net.Conn) {
	up, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil {
		c.Close()
		return
	}
	if !p.track(c, up) {
		c.Close()
		up.Close()
		return
	}
	go func() { _, _ = io.Copy(up, c); up.Close(); c.Close() }()
	_, _ = io.Copy(c, up)
	c.Close()
	up.Close()
}

func (p *proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return false
	}
	for _, c := range cs {
		p.conns[c] = true
	}
	return true
}

// setCut cuts the link (closing every open connection and refusing new ones) or restores it.
func (p *proxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			c.Close()
		}
		p.conns = map[net.Conn]bool{}
	}
}

func TestRedisCutMidLoad(t *testing.T) {
	shared, prefix := testenv.Redis(t)
	px := newProxy(t, shared.Options().Addr)
	rdb := redis.NewClient(&redis.Options{Addr: px.Addr(), DB: shared.Options().DB, Password: shared.Options().Password,
		Username: shared.Options().Username, MaxRetries: -1, DialTimeout: 300 * time.Millisecond})
	t.Cleanup(func() { rdb.Close() })
	st := openSQLite(t)
	m := metrics.New("test", "t")
	ss := session.NewCached(st, rdb, prefix, m, quiet)
	ctx := context.Background()
	failures := func(op string) float64 {
		return testutil.ToFloat64(m.CounterVec("session_cache_failures_total", "", "op").WithLabelValues(op))
	}

	const total, cutAt, restoreAt = 300, 100, 200
	sessions := []string{"s0", "s1", "s2"}
	written := map[string][]string{}
	t0 := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	for i := range total {
		switch i {
		case cutAt:
			px.setCut(true)
		case restoreAt:
			px.setCut(false)
		}
		s := sessions[i%len(sessions)]
		id := fmt.Sprintf("m%03d", i)
		res, err := ss.ApplyTurns(ctx, nil, []store.Turn{sessiontest.Turn("acme", s, id, uint64(i+1), sessiontest.Msg(id, 0, "x", t0.Add(time.Duration(i)*time.Second)))})
		if err != nil {
			t.Fatalf("write %d (cut %v): %v — a Redis outage must never fail the SQL write", i, i >= cutAt && i < restoreAt, err)
		}
		if res[0].Stored != 1 {
			t.Fatalf("write %d stored %d", i, res[0].Stored)
		}
		written[s] = append(written[s], id)
		// Every read sees every write so far: during the cut from SQL, after it never a stale entry.
		for _, s := range sessions {
			ms, err := ss.Active(ctx, "acme", s, 0)
			if err != nil {
				t.Fatalf("read after write %d: %v", i, err)
			}
			if got, want := idsOf(ms), fmt.Sprint(written[s]); got != want {
				t.Fatalf("after write %d (cut %v) session %s reads %s, want %s", i, i >= cutAt && i < restoreAt, s, got, want)
			}
			if len(written[s]) == 0 {
				continue
			}
			meta, err := ss.Meta(ctx, "acme", s)
			if err != nil || meta.MessageCount != int64(len(written[s])) {
				t.Fatalf("after write %d session %s meta = %+v, %v; want %d messages", i, s, meta, err, len(written[s]))
			}
		}
	}
	if failures("write") == 0 || failures("read") == 0 {
		t.Fatalf("cache failures counted: write %v, read %v; want both > 0", failures("write"), failures("read"))
	}
	// After the link returned the cache serves again, and what it holds is the SQL truth.
	for _, s := range sessions {
		n, err := shared.Exists(ctx, prefix+"cache:{acme:"+s+"}:m").Result()
		if err != nil || n != 1 {
			t.Fatalf("session %s is not cached again after the link returned (%d, %v)", s, n, err)
		}
	}
}

// TestCacheServesHits shows hits come from Redis: with the SQL store closed, a cached session
// still reads, and a write's messages reach the entry without a miss.
func TestCacheServesHits(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	st := openSQLite(t)
	ss := session.NewCached(st, rdb, prefix, nil, quiet)
	ctx := context.Background()
	t0 := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	for i := range 3 {
		id := fmt.Sprint("m", i)
		if _, err := ss.ApplyTurns(ctx, nil, []store.Turn{sessiontest.Turn("acme", "s1", id, uint64(i+1), sessiontest.Msg(id, 0, "x", t0))}); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if _, err := ss.Active(ctx, "acme", "s1", 0); err != nil { // the miss that backfills
				t.Fatal(err)
			}
		}
	}
	if n, _ := rdb.ZCard(ctx, prefix+"cache:{acme:s1}:z").Result(); n != 3 {
		t.Fatalf("cached messages = %d, want 3 (writes update the entry)", n)
	}
	if !ss.SeenRecently(ctx, "acme", "s1", "m2") {
		t.Fatal("dedup key of an applied message is not set")
	}
	st.Close()
	ms, err := ss.Active(ctx, "acme", "s1", 0)
	if err != nil || idsOf(ms) != "[m0 m1 m2]" {
		t.Fatalf("with SQL closed Active = %v, %v; want the cached [m0 m1 m2]", idsOf(ms), err)
	}
	if meta, err := ss.Meta(ctx, "acme", "s1"); err != nil || meta.MessageCount != 3 {
		t.Fatalf("with SQL closed Meta = %+v, %v", meta, err)
	}
}

func idsOf(ms []store.Message) string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.MessageID
	}
	return fmt.Sprint(out)
}

// TestAnotherWriterNeverLeavesAStaleHit: a replica that wrote SQL without reaching this cache
// (no cache of its own here; in production one whose cache update and drop both failed) is
// seen at the next read: the hit is checked against the SQL row and dropped when behind.
func TestAnotherWriterNeverLeavesAStaleHit(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { rdb.Close() })
	st := openSQLite(t)
	cached := session.NewCached(st, rdb, "t:", nil, quiet)
	other := session.NewSQL(st)
	ctx := context.Background()
	t0 := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	apply := func(ss session.Store, i int) {
		id := fmt.Sprint("m", i)
		if _, err := ss.ApplyTurns(ctx, nil, []store.Turn{sessiontest.Turn("acme", "s1", id, uint64(i+1), sessiontest.Msg(id, 0, "x", t0))}); err != nil {
			t.Fatal(err)
		}
	}
	apply(cached, 0)
	if _, err := cached.Active(ctx, "acme", "s1", 0); err != nil { // cached now
		t.Fatal(err)
	}
	apply(other, 1)
	ms, err := cached.Active(ctx, "acme", "s1", 0)
	if err != nil || idsOf(ms) != "[m0 m1]" {
		t.Fatalf("Active after another writer = %v, %v; want [m0 m1]", idsOf(ms), err)
	}
	if meta, err := cached.Meta(ctx, "acme", "s1"); err != nil || meta.MessageCount != 2 {
		t.Fatalf("Meta after another writer = %+v, %v; want 2 messages", meta, err)
	}
}
