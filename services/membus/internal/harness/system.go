package main

import (
	"context"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/membus/membus/pkg/config"
	"github.com/membus/membus/services/membus/internal/app"
)

// startSystem runs every service in-process, as `membus up` does, on cfg with a fresh
// temporary data dir and free loopback ports (benches, the eval and tests of them). The
// returned close stops the services, runs cleanup (what the run left in shared servers), and
// removes the data dir.
func startSystem(ctx context.Context, cfg config.Config, logger *slog.Logger, cleanup func(*app.Env)) (*app.Env, func(), <-chan error, error) {
	dir, err := os.MkdirTemp("", "membus-run-")
	if err != nil {
		return nil, nil, nil, err
	}
	cfg.DataDir = dir
	cfg.NATSListen = "127.0.0.1:0"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, nil, err
	}
	cfg.HTTPAddr = ln.Addr().String()
	ln.Close()
	if err := cfg.Validate(); err != nil {
		os.RemoveAll(dir)
		return nil, nil, nil, err
	}
	env, err := app.Open(ctx, cfg, logger)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, nil, err
	}
	services, err := app.BuildAll(env)
	if err != nil {
		env.Close()
		os.RemoveAll(dir)
		return nil, nil, nil, err
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- env.RunAll(rctx, services...) }()
	closeEnv := func() {
		cancel()
		<-done
		if cleanup != nil {
			cleanup(env)
		}
		env.Close()
		os.RemoveAll(dir)
	}
	return env, closeEnv, done, nil
}

// deleteRunStreams removes a run's streams (they carry its subject prefix) from an external
// NATS; the embedded server goes away with the data dir.
func deleteRunStreams(ctx context.Context, env *app.Env, prefix string) {
	if env.Server != nil {
		return
	}
	for name := range env.JS.StreamNames(ctx).Name() {
		if strings.HasPrefix(name, strings.ToUpper(prefix)+"_") || name == "KV_"+env.Names.FailureBucket() {
			_ = env.JS.DeleteStream(ctx, name)
		}
	}
}

func cleanupContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}
