// Package harness starts whole membus systems in-process for the benches, the LoCoMo eval and
// the system tests: every service as `membus up` runs them, on a fresh data dir and free
// ports, against the embedded servers or a real backend (MariaDB, Redis, optionally an external
// NATS) whose run-scoped rows and streams it removes afterwards.
package harness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/config"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/vector/qdrant"
	"github.com/membus/membus/services/membus/internal/app"
)

// Start runs every service in-process, as `membus up` does, on cfg with a fresh
// temporary data dir and free loopback ports (benches, the eval and tests of them). The
// returned close stops the services, runs cleanup (what the run left in shared servers), and
// removes the data dir.
func Start(ctx context.Context, cfg config.Config, logger *slog.Logger, cleanup func(*app.Env)) (*app.Env, func(), <-chan error, error) {
	dir, err := os.MkdirTemp("", "membus-run-")
	if err != nil {
		return nil, nil, nil, err
	}
	env, stop, done, err := StartIn(ctx, dir, cfg, logger, cleanup)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, nil, err
	}
	closeEnv := func() {
		if err := stop(); err != nil {
			logger.Warn("services stopped with an error", "err", err)
		}
		os.RemoveAll(dir)
	}
	return env, closeEnv, done, nil
}

// drainTimeout bounds how long stop waits for the services to finish their in-flight work.
const drainTimeout = 30 * time.Second

// StartIn is Start on the data dir dir, which it leaves in place: the system tests restart on
// the same data and their t.TempDir removes it. The returned stop stops the services, runs
// cleanup and closes the environment; it returns the services' error, or an error when they
// did not drain within 30 s.
func StartIn(ctx context.Context, dir string, cfg config.Config, logger *slog.Logger, cleanup func(*app.Env)) (*app.Env, func() error, <-chan error, error) {
	cfg.DataDir = dir
	cfg.NATSListen = "127.0.0.1:0"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, nil, err
	}
	cfg.HTTPAddr = ln.Addr().String()
	if err := ln.Close(); err != nil {
		return nil, nil, nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, nil, nil, err
	}
	env, err := app.Open(ctx, cfg, logger)
	if err != nil {
		return nil, nil, nil, err
	}
	services, err := app.BuildAll(env)
	if err != nil {
		env.Close()
		return nil, nil, nil, err
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- env.RunAll(rctx, services...) }()
	// Ready as `membus up` is: the HTTP API accepts connections and the RPCs answer on the bus,
	// so a caller's first request never races the services' start.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if c, err := net.DialTimeout("tcp", cfg.HTTPAddr, 100*time.Millisecond); err == nil {
			_ = c.Close()
			if env.RPCReady() {
				break
			}
		}
		select {
		case err := <-done: // a service failed to start
			cancel()
			env.Close()
			return nil, nil, nil, fmt.Errorf("the services stopped before they were ready: %w", err)
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			runErr := <-done
			env.Close()
			return nil, nil, nil, errors.Join(errors.New("the services did not become ready within 30 s"), runErr)
		}
	}
	stop := func() error {
		cancel()
		var err error
		select {
		case err = <-done:
		case <-time.After(drainTimeout):
			err = fmt.Errorf("services did not drain within %s", drainTimeout)
		}
		if cleanup != nil {
			cleanup(env)
		}
		env.Close()
		return err
	}
	return env, stop, done, nil
}

// DeleteRunStreams removes a run's streams (they carry its subject prefix) from an external
// NATS; the embedded server goes away with the data dir.
func DeleteRunStreams(ctx context.Context, env *app.Env, prefix string) {
	if env.Server != nil {
		return
	}
	for name := range env.JS.StreamNames(ctx).Name() {
		if strings.HasPrefix(name, strings.ToUpper(prefix)+"_") || name == "KV_"+env.Names.FailureBucket() {
			_ = env.JS.DeleteStream(ctx, name)
		}
	}
}

func CleanupContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// Backend is what --backend real reads from the environment.
type Backend struct {
	DSN, RedisURL, NATSURL, NATSToken string
	QdrantURL                         string // MEMBUS_QDRANT_URL: the run gets a collection of its own
	RunID                             string // names this run's accounts and subject prefix in shared servers
}

// BackendFlag reads --backend: "embedded" (the zero Backend) or "real".
func BackendFlag(name string) (Backend, error) {
	switch name {
	case "embedded":
		return Backend{}, nil
	case "real":
		rb, err := BackendFromEnv(os.Getenv)
		rb.RunID = RandomHex(4)
		return rb, err
	default:
		return Backend{}, fmt.Errorf("--backend must be embedded or real, got %q", name)
	}
}

// CleanupRealRun removes what a run left in shared servers: its accounts' rows (they carry the
// run id) and, on an external NATS, its streams (they carry the run's prefix).
func CleanupRealRun(env *app.Env, prefix, runID string) {
	ctx, cancel := CleanupContext()
	defer cancel()
	DeleteRunStreams(ctx, env, prefix)
	if q, ok := env.Vectors.(*qdrant.Store); ok && q.Collection() != config.Defaults().QdrantCollection {
		if err := q.Drop(ctx); err != nil {
			env.Logger.Warn("cleanup", "qdrant collection", q.Collection(), "err", err)
		}
	}
	for _, table := range []string{"messages", "sessions", "archives", "memories", "memory_sources", "summaries", "tombstones", "commit_results"} {
		if _, err := env.Store.DB().ExecContext(ctx, "DELETE FROM "+table+" WHERE account_id LIKE ?", "%-"+runID); err != nil {
			env.Logger.Warn("cleanup", "table", table, "err", err)
		}
	}
}

// ErrRealBackend: --backend real without its variables.
var ErrRealBackend = errors.New("--backend real needs MEMBUS_MYSQL_DSN and MEMBUS_REDIS_URL (MEMBUS_NATS_URL optional: else an embedded NATS server; MEMBUS_QDRANT_URL optional: else the local index)")

func BackendFromEnv(getenv func(string) string) (Backend, error) {
	rb := Backend{DSN: getenv("MEMBUS_MYSQL_DSN"), RedisURL: getenv("MEMBUS_REDIS_URL"),
		NATSURL: getenv("MEMBUS_NATS_URL"), NATSToken: getenv("MEMBUS_NATS_TOKEN"), QdrantURL: getenv("MEMBUS_QDRANT_URL")}
	var missing []string
	if rb.DSN == "" {
		missing = append(missing, "MEMBUS_MYSQL_DSN")
	}
	if rb.RedisURL == "" {
		missing = append(missing, "MEMBUS_REDIS_URL")
	}
	if len(missing) > 0 {
		return rb, fmt.Errorf("%w: %s unset", ErrRealBackend, strings.Join(missing, " and "))
	}
	return rb, nil
}

// IsTerminal reports whether w is a character device (a terminal, not a log file or pipe).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Open starts every service, as `membus up` does, in a temporary data dir on free ports.
//
// With a real backend (MariaDB + Redis, optionally an external NATS), the run gets its own subject
// prefix and its accounts carry a run suffix (runID), so runs never meet in the shared servers;
// its rows and streams are removed afterwards.
func Open(ctx context.Context, syncMode, embedder string, rb Backend, logger *slog.Logger, opts ...func(*config.Config)) (*app.Env, func(), error) {
	return open(ctx, "", syncMode, embedder, rb, logger, opts...)
}

// OpenIn is Open on the data dir dir, which it leaves in place when it closes (`membus bench
// recall` restarts membus on the data it seeded).
func OpenIn(ctx context.Context, dir, syncMode, embedder string, rb Backend, logger *slog.Logger, opts ...func(*config.Config)) (*app.Env, func(), error) {
	return open(ctx, dir, syncMode, embedder, rb, logger, opts...)
}

// open is Open in dir, or in a temporary data dir when dir is "".
func open(ctx context.Context, dir, syncMode, embedder string, rb Backend, logger *slog.Logger, opts ...func(*config.Config)) (*app.Env, func(), error) {
	cfg := config.Defaults()
	cfg.NATSSync = syncMode
	cfg.Embedder = embedder
	// the model lives outside the throw-away data dir: MEMBUS_MODEL_DIR, else ./data/models
	cfg.ModelDir = os.Getenv("MEMBUS_MODEL_DIR")
	if cfg.ModelDir == "" {
		cfg.ModelDir = filepath.Join("data", "models")
	}
	cfg.InstanceID = "eval"
	for _, o := range opts {
		o(&cfg)
	}
	cfg.MySQLDSN, cfg.RedisURL, cfg.NATSURL, cfg.QdrantURL = rb.DSN, rb.RedisURL, rb.NATSURL, rb.QdrantURL
	if rb.NATSToken != "" {
		cfg.NATSToken = rb.NATSToken
	}
	var cleanup func(*app.Env)
	if rb.DSN != "" {
		cfg.SubjectPrefix = "eval" + rb.RunID
		if rb.QdrantURL != "" {
			cfg.QdrantCollection = "membus_eval_" + rb.RunID // the run's own collection, dropped after it
		}
		cleanup = func(env *app.Env) { CleanupRealRun(env, cfg.SubjectPrefix, rb.RunID) }
	}
	var env *app.Env
	var closeEnv func()
	var done <-chan error
	var err error
	if dir == "" {
		env, closeEnv, done, err = Start(ctx, cfg, logger, cleanup)
	} else {
		var stop func() error
		env, stop, done, err = StartIn(ctx, dir, cfg, logger, cleanup)
		closeEnv = func() {
			if err := stop(); err != nil {
				logger.Warn("services stopped with an error", "err", err)
			}
		}
	}
	if err != nil {
		return nil, nil, err
	}
	if err := WaitRPCReady(ctx, env, done); err != nil {
		closeEnv()
		return nil, nil, err
	}
	return env, closeEnv, nil
}

// WaitRPCReady waits until the commit and recall endpoints answer (the services register
// them once they run), or the services stop.
func WaitRPCReady(ctx context.Context, env *app.Env, done <-chan error) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	const probe = "ready-probe"
	for {
		var res contract.CommitResult
		var rec contract.RecallResponse
		err := bus.Call(ctx, env.NC, env.Names.RPC(probe, "commit"), contract.CommitRPCRequest{V: contract.Version, RequestID: probe,
			UserID: probe, SessionID: probe, Kind: contract.CommitSync, Wait: true}, &res)
		if err == nil {
			err = bus.Call(ctx, env.NC, env.Names.RPC(probe, "recall"), contract.RecallRequest{V: contract.Version, UserID: probe, Query: "ready?"}, &rec)
		}
		if err == nil {
			return nil
		}
		select {
		case err := <-done:
			return fmt.Errorf("services stopped while starting: %w", err)
		case <-ctx.Done():
			return fmt.Errorf("services not ready: %w", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
}
