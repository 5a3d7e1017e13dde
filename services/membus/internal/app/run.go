package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/membus/membus/pkg/config"
	"github.com/membus/membus/pkg/projection"
	"github.com/membus/membus/pkg/vector"
	"github.com/membus/membus/services/membus/internal/datadir"
)

// Runnable is a service: it runs until ctx is done and then drains.
type Runnable interface {
	Run(ctx context.Context) error
}

// SignalContext is cancelled by SIGINT or SIGTERM.
func SignalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// RunService runs the named service alone in this process (distributed mode: `membus ingest`)
// until ctx is done; every service but the gateway, which has its own, gets an ops server for
// /healthz, /readyz and /metrics on the HTTP address.
func RunService(ctx context.Context, cfg config.Config, logger *slog.Logger, name string) error {
	// A service alone owns its data dir too (its local vector index, the embedded NATS server
	// without MEMBUS_NATS_URL, SQLite without MEMBUS_MYSQL_DSN): one process per data dir.
	lock, err := datadir.Acquire(cfg.DataDir)
	if err != nil {
		return err
	}
	defer lock.Close()
	env, err := OpenService(ctx, cfg, logger, name)
	if err != nil {
		return err
	}
	defer env.Close()
	if err := lock.Record(cfg.HTTPAddr, env.NATSURL); err != nil {
		logger.Warn("the data dir lock file does not name the addresses", "err", err)
	}
	var run []Runnable
	if local, ok := env.Vectors.(*vector.Local); ok && name == "recall" {
		// A recall replica with a local index of its own follows what the other processes
		// commit (docs/architecture.md "One index every replica sees").
		env.Follower = projection.NewFollower(env.JS, env.Names, projection.Deps{Store: env.Store, Embedder: env.Embedder, Vectors: local},
			local, env.Logger.With("service", "recall", "component", "follower"))
		run = append(run, env.Follower)
	}
	svc, err := Build(env, name)
	if err != nil {
		return err
	}
	run = append(run, svc)
	if name != "gateway" {
		run = append(run, env.OpsServer(cfg.HTTPAddr))
	}
	return env.RunAll(ctx, run...)
}

// RunAll runs the services, the outbox relay (unless the process's one service writes no
// outbox rows: the gateway) and the metrics publisher until ctx is done or one of them fails; then it cancels the rest and waits for them to drain.
func (e *Env) RunAll(ctx context.Context, services ...Runnable) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, len(services)+2)
	run := func(name string, f func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(ctx); err != nil && !errors.Is(err, context.Canceled) {
				errs <- fmt.Errorf("%s: %w", name, err)
				cancel()
			}
		}()
	}
	for i, s := range services {
		run(fmt.Sprintf("service %d (%T)", i, s), s.Run)
	}
	if !e.relayOff {
		run("outbox relay", e.Relay.Run)
	}
	run("metrics publisher", func(ctx context.Context) error { e.PublishMetrics(ctx); return nil })
	wg.Wait()
	close(errs)
	return errors.Join(collect(errs)...)
}

func collect(ch <-chan error) []error {
	var out []error
	for err := range ch {
		out = append(out, err)
	}
	return out
}

// MetricsHandler serves every registry of this process on one /metrics.
func (e *Env) MetricsHandler() http.Handler {
	e.mu.Lock()
	defer e.mu.Unlock()
	var g prometheus.Gatherers
	for _, m := range e.metrics {
		g = append(g, m.Registry)
	}
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// OpsServer serves /healthz, /readyz and /metrics for a service that has no HTTP API of its own.
func (e *Env) OpsServer(addr string) Runnable { return opsServer{e: e, addr: addr} }

type opsServer struct {
	e    *Env
	addr string
}

func (o opsServer) Run(ctx context.Context) error {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"status":"ok"}`)) // a client that went away needs no answer
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		for _, p := range o.e.Probes("sql", "redis", "nats") {
			if err := p.Check(ctx); err != nil {
				http.Error(w, p.Name+": "+err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		_, _ = w.Write([]byte(`{"status":"ready"}`)) // a client that went away needs no answer
	})
	mux.Handle("GET /metrics", o.e.MetricsHandler())
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("listen on %s (--http-addr / MEMBUS_HTTP_ADDR): %w", o.addr, err)
	}
	if o.e.TLS != nil {
		ln = tls.NewListener(ln, o.e.TLS)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			o.e.Logger.Warn("ops server shutdown", "err", err)
		}
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// RPCReady reports whether the request-reply services answer on the bus: any reply, an error
// too, means their endpoints are registered. The HTTP API can accept connections before they
// are, so `membus up` says "up" only once both hold.
func (e *Env) RPCReady() bool {
	for _, op := range []string{"recall", "commit", "summary"} {
		if _, err := e.NC.Request(e.Names.RPC("probe", op), []byte("{}"), 500*time.Millisecond); err != nil {
			return false
		}
	}
	return true
}
