// Package gateway is membus's stateless HTTP JSON API (docs/design.md §2 item 6, §3, §11): it
// authenticates each request against the API keys in the store, fixes the tenant from the key,
// publishes turns to JetStream and reaches every other service through bus RPC. The account in
// every subject it uses comes from the caller's identity, never from the URL or the body.
package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/metrics"
	"github.com/membus/membus/pkg/store"
)

// ErrListen is returned (wrapped) by Run when the HTTP address cannot be listened on.
var ErrListen = errors.New("http listen address unavailable")

// shutdownTimeout bounds the graceful shutdown of Run.
const shutdownTimeout = 10 * time.Second

// KeyStore looks up a presented API key. *store.Store implements it; it returns
// store.ErrNotFound for an unknown or revoked key.
type KeyStore interface {
	LookupKey(ctx context.Context, key string) (store.APIKey, error)
}

// Deps are what the gateway needs.
type Deps struct {
	NC      *nats.Conn          // RPC to the other services
	JS      jetstream.JetStream // turn publishing
	Names   bus.Names
	Keys    KeyStore         // required unless Config.InsecureNoAuth
	Metrics *metrics.Metrics // nil: a private registry
	Logger  *slog.Logger     // nil: discard
	Ready   []bus.Probe      // readiness checks besides the NATS connection
	Now     func() time.Time // nil: time.Now
	// MetricsHandler serves /metrics; nil: Metrics' own registry. `membus up` passes one that
	// serves every service of the process.
	MetricsHandler http.Handler
	// Redis, when set, shares the per-key rate limit buckets and the Idempotency-Key answers
	// among every gateway replica; nil keeps both in this replica's memory.
	Redis redis.UniversalClient
}

// Service is the gateway.
type Service struct {
	cfg  Config
	deps Deps
	log  *slog.Logger
	mux  *http.ServeMux
	h    http.Handler

	limiter rateLimiter
	idem    idempotencyStore

	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec

	stopStreams chan struct{} // closed when Run shuts down: ends the dashboard streams
}

// New checks cfg and deps and builds the router.
func New(cfg Config, deps Deps) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	switch {
	case deps.NC == nil:
		return nil, errors.New("gateway: Deps.NC is required")
	case deps.JS == nil:
		return nil, errors.New("gateway: Deps.JS is required")
	case deps.Keys == nil && !cfg.InsecureNoAuth:
		return nil, errors.New("gateway: Deps.Keys is required unless insecure_no_auth is set")
	case deps.Names.Prefix == "":
		return nil, errors.New("gateway: Deps.Names is required (bus.NewNames)")
	}
	if deps.Metrics == nil {
		deps.Metrics = metrics.New("gateway", "")
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	s := &Service{
		cfg:  cfg,
		deps: deps,
		log:  deps.Logger,
		requests: deps.Metrics.CounterVec("gateway_http_requests_total",
			"HTTP requests by route pattern, method and status.", "route", "status"),
		latency: deps.Metrics.HistogramVec("gateway_http_request_duration_seconds",
			"HTTP request latency in seconds, by route pattern and status.", "route", "status"),
	}
	if deps.Redis != nil {
		s.limiter = newRedisLimiter(deps.Redis, deps.Names.Prefix+":gw:rate:", cfg.RateLimit, cfg.RateBurst, deps.Now)
		s.idem = newRedisIdempotency(deps.Redis, deps.Names.Prefix+":gw:idem:")
	} else {
		s.limiter = newMemoryLimiter(cfg.RateLimit, cfg.RateBurst, deps.Now)
		s.idem = newMemoryIdempotency(deps.Now)
	}
	s.stopStreams = make(chan struct{})
	s.mux = s.routes()
	s.h = s.observe(s.mux)
	return s, nil
}

// Handler is the router with request ids, logging and metrics (tests use it with httptest).
func (s *Service) Handler() http.Handler { return s.h }

// Run listens on Config.Addr and serves until ctx is done, then shuts down gracefully
// (in-flight requests get up to 10 s).
func (s *Service) Run(ctx context.Context) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("%w: gateway cannot listen on %s (set another with --http-addr or MEMBUS_HTTP_ADDR): %w",
			ErrListen, s.cfg.Addr, err)
	}
	if s.cfg.TLS != nil {
		ln = tls.NewListener(ln, s.cfg.TLS)
	}
	srv := &http.Server{
		Handler:           s.h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       120 * time.Second,
		// No WriteTimeout: a synchronous commit waits up to its own timeout_ms; every handler
		// bounds its bus calls itself.
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		ErrorLog:    slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	var stopOnce sync.Once
	srv.RegisterOnShutdown(func() { stopOnce.Do(func() { close(s.stopStreams) }) })
	s.log.Info("gateway listening", "addr", ln.Addr().String(), "insecure_no_auth", s.cfg.InsecureNoAuth)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("gateway serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("gateway shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("gateway serve: %w", err)
	}
	return nil
}

// route is one registered route: the pattern as http.ServeMux reads it ("METHOD /path").
type route struct {
	pattern string
	handler http.HandlerFunc
}

// routeTable lists every route of the gateway; routes registers exactly these, and the OpenAPI
// test checks the spec against them. Data routes go through authed (writes also through
// idempotent); ops routes through opsAuthed; health, readiness, metrics and the spec need no key.
func (s *Service) routeTable() []route {
	metricsHandler := s.deps.Metrics.Handler()
	if s.deps.MetricsHandler != nil {
		metricsHandler = s.deps.MetricsHandler
	}
	return []route{
		{"GET /healthz", s.healthz},
		{"GET /readyz", s.readyz},
		{"GET /metrics", metricsHandler.ServeHTTP},
		{"GET /openapi.yaml", s.openapi},
		{routeDashboard, s.dashboardPage},
		{routeDashboardStream, s.opsAuthed(s.dashboardStream)},

		{"POST /v1/sessions/{session_id}/messages", s.authed(s.postMessages)},
		{"GET /v1/sessions/{session_id}", s.authed(s.getSession)},
		{"DELETE /v1/sessions/{session_id}", s.authed(s.idempotent(s.deleteSession))},
		{"POST /v1/sessions/{session_id}/commit", s.authed(s.idempotent(s.postCommit))},
		{"GET /v1/sessions/{session_id}/context", s.authed(s.getContext)},
		{"GET /v1/sessions/{session_id}/archives/search", s.authed(s.searchArchives)},
		{"GET /v1/archives/{archive_id}", s.authed(s.expandArchive)},
		{"POST /v1/recall", s.authed(s.postRecall)},
		{"GET /v1/memories", s.authed(s.listMemories)},
		{"POST /v1/memories", s.authed(s.idempotent(s.storeMemory))},
		{"POST /v1/memories/forget", s.authed(s.idempotent(s.forgetByQuery))},
		{"GET /v1/memories/{id}", s.authed(s.getMemory)},
		{"DELETE /v1/memories/{id}", s.authed(s.idempotent(s.forgetMemory))},
		{"DELETE /v1/users/{user_id}", s.adminAuthed(s.idempotent(s.deleteUser))},
		{"GET /v1/summaries", s.authed(s.getSummary)},
		{"GET /v1/stats/overview", s.opsAuthed(s.stats(contract.StatsOverview))},
		{"GET /v1/stats/categories", s.opsAuthed(s.stats(contract.StatsCategories))},
		{"GET /v1/stats/trends", s.opsAuthed(s.stats(contract.StatsTrends))},
		{"GET /v1/stats/agents", s.opsAuthed(s.stats(contract.StatsAgents))},
	}
}

// routes registers every route of routeTable.
func (s *Service) routes() *http.ServeMux {
	mux := http.NewServeMux()
	for _, rt := range s.routeTable() {
		mux.HandleFunc(rt.pattern, rt.handler)
	}
	return mux
}
