// Package runtime builds what every membus service needs from the configuration — the bus
// connection (or the embedded server), the SQL store, locks, the embedder and the vector
// store — once, so `membus up` and a single-service process share one code path.
package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/config"
	"github.com/membus/membus/pkg/embed"
	"github.com/membus/membus/pkg/lock"
	"github.com/membus/membus/pkg/metrics"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/vector"
)

// Env is the set of shared dependencies of one process.
type Env struct {
	Config   config.Config
	Logger   *slog.Logger
	Names    bus.Names
	Server   *server.Server // the embedded NATS server; nil with MEMBUS_NATS_URL
	NATSURL  string         // what clients (the plugin) connect to
	NC       *nats.Conn
	JS       jetstream.JetStream
	Store    *store.Store
	Redis    *redis.Client // nil when MEMBUS_REDIS_URL is unset
	Locker   lock.Locker
	Embedder embed.Embedder
	Vectors  vector.Store
	Relay    *bus.Relay

	mu      sync.Mutex
	metrics []*metrics.Metrics
	closers []func()
}

// Open builds the environment. In embedded mode (no MEMBUS_NATS_URL) it starts the NATS
// server in the data dir, uses SQLite at <data>/membus.db unless MEMBUS_MYSQL_DSN is set, and
// in-process locks unless MEMBUS_REDIS_URL is set.
func Open(ctx context.Context, cfg config.Config, logger *slog.Logger) (_ *Env, err error) {
	e := &Env{Config: cfg, Logger: logger}
	defer func() {
		if err != nil {
			e.Close()
		}
	}()
	if e.Names, err = bus.NewNames(cfg.SubjectPrefix); err != nil {
		return nil, fmt.Errorf("MEMBUS_SUBJECT_PREFIX: %w", err)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("MEMBUS_DATA_DIR %s: %w", cfg.DataDir, err)
	}
	if err := e.openBus(ctx); err != nil {
		return nil, err
	}
	if err := e.openStore(ctx); err != nil {
		return nil, err
	}
	if err := e.openRedis(ctx); err != nil {
		return nil, err
	}
	if err := e.openVectors(ctx); err != nil {
		return nil, err
	}
	e.Relay = bus.NewRelay(e.JS, e.Names, e.Store.Outbox(), bus.RelayConfig{Logger: logger.With("component", "outbox")})
	return e, nil
}

func (e *Env) openBus(ctx context.Context) error {
	cfg := e.Config
	token := cfg.NATSToken
	if cfg.Embedded() {
		if token == "" {
			t, err := bus.LoadOrCreateToken(cfg.DataDir)
			if err != nil {
				return err
			}
			token = t
		}
		s, err := bus.StartEmbedded(bus.EmbeddedConfig{DataDir: cfg.DataDir, Listen: cfg.NATSListen, Token: token, Sync: cfg.NATSSync, Logger: e.Logger})
		if err != nil {
			return err
		}
		e.Server = s
		e.closers = append(e.closers, func() { s.Shutdown(); s.WaitForShutdown() })
		e.NATSURL = s.ClientURL()
	} else {
		e.NATSURL = cfg.NATSURL
	}
	e.Config.NATSToken = token
	nc, err := bus.Connect(ctx, e.NATSURL, token, "membus-"+cfg.InstanceID)
	if err != nil {
		return fmt.Errorf("connect to NATS at %s: %w", e.NATSURL, err)
	}
	e.NC = nc
	e.closers = append(e.closers, func() { _ = nc.Drain(); nc.Close() })
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	e.JS = js
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := bus.EnsureStreams(sctx, js, e.Names, bus.DefaultStreamLimits()); err != nil {
		return fmt.Errorf("ensure streams: %w", err)
	}
	return nil
}

func (e *Env) openStore(ctx context.Context) error {
	var err error
	if e.Config.MySQLDSN != "" {
		e.Store, err = store.OpenMySQL(ctx, e.Config.MySQLDSN)
	} else {
		e.Store, err = store.OpenSQLite(ctx, filepath.Join(e.Config.DataDir, "membus.db"))
	}
	if err != nil {
		return err
	}
	s := e.Store
	e.closers = append(e.closers, func() { s.Close() })
	return nil
}

func (e *Env) openRedis(ctx context.Context) error {
	if e.Config.RedisURL == "" {
		e.Locker = lock.NewLocal()
		if !e.Config.Embedded() {
			e.Logger.Warn("MEMBUS_REDIS_URL is unset: locks are per process, so run one extract and one summarizer replica")
		}
		return nil
	}
	opt, err := redis.ParseURL(e.Config.RedisURL)
	if err != nil {
		return fmt.Errorf("MEMBUS_REDIS_URL: %w", err)
	}
	c := redis.NewClient(opt)
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.Ping(pctx).Err(); err != nil {
		c.Close()
		return fmt.Errorf("connect to Redis (MEMBUS_REDIS_URL): %w", err)
	}
	e.Redis = c
	e.Locker = lock.NewRedis(c, e.Names.Prefix+":")
	e.closers = append(e.closers, func() { c.Close() })
	return nil
}

// openVectors opens the embedder and the local vector store. The store is checked against
// SQL's stored embeddings and rebuilt from them when it disagrees or is missing.
func (e *Env) openVectors(ctx context.Context) error {
	switch e.Config.Embedder {
	case "auto", "hash":
	default:
		return fmt.Errorf("MEMBUS_EMBEDDER=%s: not available in this build yet; use hash or auto", e.Config.Embedder)
	}
	e.Embedder = embed.NewCached(embed.NewHash(), 10000)
	dir := filepath.Join(e.Config.DataDir, "vectors")
	v, err := vector.OpenLocal(dir, e.Embedder.Model(), e.Embedder.Dim())
	if errors.Is(err, vector.ErrModelMismatch) {
		return fmt.Errorf("vector index in %s was built with another embedding model: %w (delete the folder to rebuild it from SQL)", dir, err)
	}
	if err != nil {
		return err
	}
	e.Vectors = v
	e.closers = append(e.closers, func() { v.Close() })
	return e.reconcileVectors(ctx, v)
}

// reconcileVectors rebuilds the local index from SQL when their contents disagree.
func (e *Env) reconcileVectors(ctx context.Context, v *vector.Local) error {
	var pts []vector.Point
	err := e.Store.EachEmbedding(ctx, e.Embedder.Model(), func(m store.Memory) error {
		pts = append(pts, MemoryPoint(m))
		return nil
	})
	if err != nil {
		return fmt.Errorf("read embeddings from SQL: %w", err)
	}
	ids := make([]string, len(pts))
	for i, p := range pts {
		ids[i] = p.ID
	}
	n, sum, err := v.Digest(ctx, "")
	if err != nil {
		return err
	}
	if n == len(pts) && sum == vector.DigestIDs(ids) && len(v.Problems()) == 0 {
		return nil
	}
	e.Logger.Info("rebuilding the local vector index from SQL", "points", len(pts))
	return v.Rebuild(ctx, pts)
}

// MemoryPoint is the index point of a memory row.
func MemoryPoint(m store.Memory) vector.Point {
	return vector.Point{
		ID: m.ID, AccountID: m.AccountID, UserID: m.UserID, AgentID: m.AgentID, Scope: m.Scope,
		Kind: "memory", Category: m.Category, Text: m.Text, Vector: m.Embedding, CreatedAt: m.CreatedAt,
	}
}

// Metrics returns a new metrics registry for a service of this process; Close stops nothing
// of it, PublishMetrics publishes them all.
func (e *Env) Metrics(service string) *metrics.Metrics {
	m := metrics.New(service, e.Config.InstanceID)
	e.mu.Lock()
	e.metrics = append(e.metrics, m)
	e.mu.Unlock()
	return m
}

// PublishMetrics publishes every registry's snapshot to <p>.metrics.<service>.<instance>
// every 5 s until ctx is done.
func (e *Env) PublishMetrics(ctx context.Context) {
	e.mu.Lock()
	ms := append([]*metrics.Metrics(nil), e.metrics...)
	e.mu.Unlock()
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = m.Publish(ctx, e.NC, e.Names.Metrics(m.Service(), bus.InstanceToken(m.Instance())), 5*time.Second)
		}()
	}
	wg.Wait()
}

// Probes are the health probes of the process's dependencies (outage detection).
func (e *Env) Probes() []bus.Probe {
	ps := []bus.Probe{{Name: "sql", Check: e.Store.Ping}}
	if e.Redis != nil {
		c := e.Redis
		ps = append(ps, bus.Probe{Name: "redis", Check: func(ctx context.Context) error { return c.Ping(ctx).Err() }})
	}
	ps = append(ps, bus.Probe{Name: "nats", Check: func(context.Context) error {
		if !e.NC.IsConnected() {
			return errors.New("nats disconnected")
		}
		return nil
	}})
	return ps
}

// Close releases everything in reverse order of opening.
func (e *Env) Close() {
	for i := len(e.closers) - 1; i >= 0; i-- {
		e.closers[i]()
	}
	e.closers = nil
}
