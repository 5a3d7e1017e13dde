// Package app is membus's composition root: it builds the concrete adapters from the
// configuration once — the bus connection (or the embedded NATS server), the SQL store, Redis,
// locks, the embedder (hash, ONNX or OpenAI) and the vector store (local or Qdrant) — and hands
// them to each service's New through its Deps (wire.go). `membus up` and a single-service
// process (`membus ingest`, …) share this one code path; service packages import none of it.
package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/bus/embedded"
	"github.com/membus/membus/pkg/config"
	"github.com/membus/membus/pkg/embed"
	"github.com/membus/membus/pkg/lock"
	"github.com/membus/membus/pkg/metrics"
	"github.com/membus/membus/pkg/projection"
	"github.com/membus/membus/pkg/session"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/vector"
	"github.com/membus/membus/pkg/vector/qdrant"
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
	Sessions session.Store // session history: SQL, with the Redis hot cache when Redis is set
	Locker   lock.Locker
	Embedder embed.Embedder
	Vectors  vector.Store
	Relay    *bus.Relay
	// Follower keeps this process's local index current from the event stream; set only for
	// a recall replica that runs alone with a local index (RunService).
	Follower *projection.Follower
	// TLS is the certificate the HTTP listeners serve (tls_cert, tls_key); nil: plain HTTP.
	TLS *tls.Config

	// service is the one service this process runs (OpenService), "" for all of them.
	service string
	// relayOff: the process's service writes no outbox rows, so it runs no relay.
	relayOff bool

	mu      sync.Mutex
	metrics []*metrics.Metrics
	closers []closer
}

// Open builds the environment of every service in one process (`membus up`). In embedded mode
// (no MEMBUS_NATS_URL) it starts the NATS server in the data dir, uses SQLite at
// <data>/membus.db unless MEMBUS_MYSQL_DSN is set, and in-process locks unless
// MEMBUS_REDIS_URL is set. It connects to NATS as bus.ServiceUser (or MEMBUS_NATS_USER).
func Open(ctx context.Context, cfg config.Config, logger *slog.Logger) (*Env, error) {
	return open(ctx, cfg, logger, "")
}

// OpenService builds the environment of one service run alone (`membus ingest`): as Open, but
// it connects to NATS as the service's own user (bus.Names.ServiceUser, unless
// MEMBUS_NATS_USER says otherwise) and its outbox relay publishes only the rows that user may.
func OpenService(ctx context.Context, cfg config.Config, logger *slog.Logger, service string) (*Env, error) {
	return open(ctx, cfg, logger, service)
}

func open(ctx context.Context, cfg config.Config, logger *slog.Logger, service string) (_ *Env, err error) {
	e := &Env{Config: cfg, Logger: logger, service: service}
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
	if e.TLS, err = ServerTLS(cfg); err != nil {
		return nil, err
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
	e.Sessions = session.NewSQL(e.Store)
	if e.Redis != nil {
		e.Sessions = session.NewCached(e.Store, e.Redis, e.Names.Prefix+":", e.Metrics("sessions"), logger.With("component", "session-cache"))
	}
	if err := e.openVectors(ctx); err != nil {
		return nil, err
	}
	rc := bus.RelayConfig{Logger: logger.With("component", "outbox")}
	if service != "" && e.natsUser() != bus.ServiceUser {
		rc.Subjects = e.Names.OutboxSubjects(service)
		e.relayOff = len(rc.Subjects) == 0
	}
	e.Relay = bus.NewRelay(e.JS, e.Names, e.Store.Outbox(), rc)
	return e, nil
}

func (e *Env) openBus(ctx context.Context) error {
	cfg := e.Config
	token := cfg.NATSToken
	if cfg.Embedded() {
		if token == "" {
			t, err := embedded.LoadOrCreateToken(cfg.DataDir)
			if err != nil {
				return err
			}
			token = t
		}
		s, err := embedded.Start(embedded.Config{DataDir: cfg.DataDir, Listen: cfg.NATSListen, Token: token, Auth: cfg.NATSAuth, Sync: cfg.NATSSync,
			Names: e.Names, TLS: e.TLS, Logger: e.Logger})
		if err != nil {
			return err
		}
		e.Server = s
		e.onClose("nats server", func() error { s.Shutdown(); s.WaitForShutdown(); return nil })
		e.NATSURL = s.ClientURL()
	} else {
		e.NATSURL = cfg.NATSURL
	}
	e.Config.NATSToken = token
	opts, err := e.identity(token)
	if err != nil {
		return err
	}
	clientTLS, err := NATSClientTLS(cfg)
	if err != nil {
		return err
	}
	if clientTLS != nil {
		opts = append(opts, nats.Secure(clientTLS))
	}
	nc, err := bus.Connect(ctx, e.NATSURL, token, "membus-"+cfg.InstanceID, opts...)
	if err != nil {
		return fmt.Errorf("connect to NATS at %s as %s: %w", e.NATSURL, e.natsUser(), err)
	}
	e.NC = nc
	e.onClose("nats connection", func() error { err := nc.Drain(); nc.Close(); return err })
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	e.JS = js
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	lim := bus.DefaultStreamLimits()
	if !cfg.Embedded() { // the embedded server is a single node
		lim.Replicas = cfg.StreamReplicas
	}
	if err := bus.EnsureStreams(sctx, js, e.Names, lim); err != nil {
		return fmt.Errorf("ensure streams: %w", err)
	}
	return nil
}

// natsUser is the NATS user this process connects as: MEMBUS_NATS_USER, else the service's
// own user when it runs alone, else bus.ServiceUser.
func (e *Env) natsUser() string {
	switch {
	case e.Config.NATSUser != "":
		return e.Config.NATSUser
	case e.service != "":
		return e.Names.ServiceUser(e.service)
	default:
		return bus.ServiceUser
	}
}

// identity returns the connect options of natsUser: its password is MEMBUS_NATS_PASSWORD,
// else derived from the token (the token itself for bus.ServiceUser). Without either the
// process connects as bus.Connect does (a server without auth).
func (e *Env) identity(token string) ([]nats.Option, error) {
	user, pass := e.natsUser(), e.Config.NATSPassword
	if pass == "" && token == "" {
		return nil, nil
	}
	if user == bus.ServiceUser {
		if pass == "" {
			return nil, nil // bus.Connect sends the token as ServiceUser's password
		}
		return []nats.Option{nats.UserInfo(user, pass)}, nil
	}
	if pass == "" {
		svc := e.Names.ServiceOf(user)
		if svc == "" {
			return nil, fmt.Errorf("MEMBUS_NATS_USER %s is no service's user (%s-<service>): set MEMBUS_NATS_PASSWORD too", user, e.Names.Prefix)
		}
		var err error
		if pass, err = bus.ServicePassword(token, svc); err != nil {
			return nil, err
		}
	}
	return bus.ServiceOptions(user, pass), nil
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
	e.onClose("sql store", e.Store.Close)
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
	e.onClose("redis", c.Close)
	return nil
}

// openVectors opens the embedder and the vector store: Qdrant when MEMBUS_QDRANT_URL is set
// (no reconcile: Qdrant is the deployment's index), else the local store, which is checked
// against SQL's stored embeddings and rebuilt from them when it disagrees or is missing.
// MEMBUS_EMBEDDER=auto follows the model already stored with the index (or, without an index,
// with SQL's memories); on new data it is onnx when the local model is present
// (MEMBUS_MODEL_DIR, `make model`), else hash. Vectors of two models never mix: data embedded
// with a model other than the chosen one (or, under auto, than the one in MEMBUS_MODEL_DIR) is
// refused, with what keeps the data's model and what moves the data onto the other
// (`membus reembed`, with membus stopped).
func (e *Env) openVectors(ctx context.Context) error {
	cfg := e.Config
	redactedQdrant := cfg.Redacted().QdrantURL
	dir := filepath.Join(cfg.DataDir, "vectors")

	stored, err := e.storedModel(ctx, dir)
	if err != nil {
		return err
	}
	// The models SQL's active memories were embedded with: a rebuilt index takes only the
	// memories of its own model, so these must agree with the embedder too.
	sqlModels, err := e.memoryEmbedModels(ctx)
	if err != nil {
		return err
	}
	follow := stored
	if follow == "" && len(sqlModels) == 1 {
		follow = sqlModels[0]
	}
	inner, err := e.dataEmbedder(ctx, follow)
	if err != nil {
		return err
	}
	for _, m := range sqlModels {
		if m != inner.Model() {
			return fmt.Errorf("MEMBUS_EMBEDDER=%s gives %s vectors, but memories in SQL were embedded with %s (models found: %s); "+
				"vectors of two models never mix: stop membus and run `membus reembed` with these settings to move every memory "+
				"onto %s, or use MEMBUS_EMBEDDER=auto (it follows the data)", cfg.Embedder, inner.Model(), m, strings.Join(sqlModels, ", "), inner.Model())
		}
	}
	e.Embedder = embed.NewCached(inner, 10000)

	if cfg.QdrantURL != "" {
		s, err := qdrant.Open(ctx, qdrant.Config{URL: cfg.QdrantURL, Collection: cfg.QdrantCollection, Model: e.Embedder.Model(), Dim: e.Embedder.Dim()})
		if errors.Is(err, vector.ErrModelMismatch) {
			return fmt.Errorf("MEMBUS_QDRANT_URL %s: the collection was built with another embedding model than MEMBUS_EMBEDDER's %s: %w",
				redactedQdrant, e.Embedder.Model(), err)
		}
		if err != nil {
			return fmt.Errorf("MEMBUS_QDRANT_URL %s: %w", redactedQdrant, err)
		}
		e.Vectors = s
		e.onClose("qdrant", s.Close)
		return nil
	}
	v, err := vector.OpenLocal(dir, e.Embedder.Model(), e.Embedder.Dim(), vector.WithExactMax(cfg.VectorExactMax))
	if errors.Is(err, vector.ErrModelMismatch) {
		return fmt.Errorf("vector index in %s was built with %s, not MEMBUS_EMBEDDER's %s: %w (vectors of two models never mix; "+
			"use MEMBUS_EMBEDDER=auto, which follows the index, or stop membus and run `membus reembed` with these settings "+
			"to move the data onto %s)", dir, stored, e.Embedder.Model(), err, e.Embedder.Model())
	}
	if err != nil {
		return fmt.Errorf("vector index in %s (MEMBUS_DATA_DIR): %w", dir, err)
	}
	e.Vectors = v
	e.onClose("vector index", v.Close)
	return projection.Reconcile(ctx, projection.Deps{Store: e.Store, Embedder: e.Embedder, Vectors: v}, v, e.Logger)
}

// memoryEmbedModels lists the embedding models of SQL's active memories, sorted.
func (e *Env) memoryEmbedModels(ctx context.Context) ([]string, error) {
	rows, err := e.Store.DB().QueryContext(ctx, `SELECT DISTINCT embed_model FROM memories WHERE embed_model IS NOT NULL AND embed_model <> ''
		AND valid_to_us IS NULL AND superseded_by IS NULL AND duplicate_of IS NULL ORDER BY embed_model`)
	if err != nil {
		return nil, fmt.Errorf("read embedding models from SQL: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var m string
		if err := rows.Scan(&m); err != nil {
			return nil, fmt.Errorf("read embedding models from SQL: %w", err)
		}
		out = append(out, m)
	}
	return out, rows.Err()
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

// Registry returns the metrics registry of this process's service named service (the first
// made), or nil when it has none.
func (e *Env) Registry(service string) *metrics.Metrics {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, m := range e.metrics {
		if m.Service() == service {
			return m
		}
	}
	return nil
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

// Probes returns the named health probes of the process's dependencies ("sql", "redis",
// "nats", "vectors", "embedder"), in the order asked; a dependency this process does not use
// (Redis when MEMBUS_REDIS_URL is unset; a vector store or an embedder that is no server of its
// own: the local index, the hash and ONNX embedders) has no probe. Services use them for outage detection, the gateway and the ops server for
// /readyz.
func (e *Env) Probes(names ...string) []bus.Probe {
	all := map[string]func(context.Context) error{
		"sql": e.Store.Ping,
		"nats": func(context.Context) error {
			if !e.NC.IsConnected() {
				return errors.New("nats disconnected")
			}
			return nil
		},
	}
	if e.Redis != nil {
		c := e.Redis
		all["redis"] = func(ctx context.Context) error { return c.Ping(ctx).Err() }
	}
	if p, ok := e.Vectors.(vector.Pinger); ok {
		all["vectors"] = p.Ping
	}
	if p, ok := embed.PingerOf(e.Embedder); ok {
		all["embedder"] = p.Ping
	}
	var ps []bus.Probe
	for _, n := range names {
		if check, ok := all[n]; ok {
			ps = append(ps, bus.Probe{Name: n, Check: check})
		}
	}
	return ps
}

// closer is one thing Close releases.
type closer struct {
	what  string
	close func() error
}

// onClose registers f for Close.
func (e *Env) onClose(what string, f func() error) { e.closers = append(e.closers, closer{what, f}) }

// Close releases everything in reverse order of opening. A failure is logged: at shutdown there
// is nothing else to do about it, and the rest is still released.
func (e *Env) Close() {
	for i := len(e.closers) - 1; i >= 0; i-- {
		if err := e.closers[i].close(); err != nil {
			e.Logger.Warn("close "+e.closers[i].what, "err", err)
		}
	}
	e.closers = nil
}
