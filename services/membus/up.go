package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/membus/membus/pkg/config"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/services/membus/internal/app"
	"github.com/membus/membus/services/membus/internal/cli"
	"github.com/membus/membus/services/membus/internal/datadir"
)

func upCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "up",
		Short: "run every service in one process (embedded NATS, SQLite): the quick start",
		Long: `Run every service in one process with embedded defaults: a NATS server with JetStream and
SQLite in the data dir, the hash or local ONNX embedder, the local vector index. It prints a
ready block (HTTP API, the plugin's NATS settings, the data dir, and the dev API key on first
start) once the HTTP API accepts connections. Ctrl-C (SIGINT) or SIGTERM drains: in-flight
batches finish and are acked, then the server shuts down.`,
		Args: cli.NoArgs,
	}
	runConfigured(cmd, up)
	return cmd
}

// up runs every service in one process until a signal, and returns the exit code.
func up(cfg config.Config, stdout, stderr io.Writer) int {
	start := time.Now()
	// One process per data dir (docs/operations.md "One owner per data dir"): a second membus up
	// on it refuses here, naming the first, before anything else can fail less clearly.
	lock, err := datadir.Acquire(cfg.DataDir)
	if err != nil {
		fmt.Fprintf(stderr, "membus up: %v\n", err)
		return 1
	}
	defer lock.Close()
	// The gateway listens only once every service runs; check the address first, so that a
	// taken port is a clear error before anything starts or "membus is up" is printed.
	if err := checkListen(cfg.HTTPAddr); err != nil {
		fmt.Fprintf(stderr, "membus up: %v\n", err)
		return 1
	}
	logger := cfg.Logger(stderr, "")
	ctx, stop := app.SignalContext()
	defer stop()
	env, err := app.Open(ctx, cfg, logger)
	if err != nil {
		fmt.Fprintf(stderr, "membus up: %v\n", err)
		return 1
	}
	defer env.Close()

	services, err := app.BuildAll(env)
	if err != nil {
		fmt.Fprintf(stderr, "membus up: %v\n", err)
		return 1
	}
	if !cfg.InsecureNoAuth {
		if err := devKey(ctx, env, stdout); err != nil {
			fmt.Fprintf(stderr, "membus up: create the dev API key: %v\n", err)
			return 1
		}
	}
	done := make(chan error, 1)
	go func() { done <- env.RunAll(ctx, services...) }()
	// "Up" means the HTTP API accepts connections and the RPCs answer on the bus (the plugin's
	// first recall must find them), not merely that the services were built.
	for ready := false; !ready; {
		select {
		case err := <-done:
			if err != nil {
				fmt.Fprintf(stderr, "membus up: %v\n", err)
				return 1
			}
			return 0
		case <-time.After(5 * time.Millisecond):
			if c, err := net.DialTimeout("tcp", cfg.HTTPAddr, 100*time.Millisecond); err == nil {
				c.Close()
				ready = env.RPCReady()
			}
		}
	}
	if err := lock.Record(cfg.HTTPAddr, env.NATSURL); err != nil {
		logger.Warn("the data dir lock file does not name the addresses", "err", err)
	}
	// The ready block goes out in one write: whoever waits for "membus is up" (a script, a
	// supervisor, the system tests) reads the addresses and the plugin's line with it.
	var ready strings.Builder
	fmt.Fprintf(&ready, "membus is up in %d ms (pid %d)\n", time.Since(start).Milliseconds(), os.Getpid())
	scheme := "http"
	if env.TLS != nil {
		scheme = "https"
	}
	fmt.Fprintf(&ready, "  HTTP API:  %s://%s\n", scheme, cfg.HTTPAddr)
	// Over TLS the plugin must trust the server's certificate: tls_ca when one signed it, else
	// the certificate itself (self-signed).
	tlsCA := ""
	if env.TLS != nil {
		tlsCA = cmp.Or(cfg.TLSCA, cfg.TLSCert)
	}
	if env.Config.NATSAuth == "token" {
		tlsEnv := ""
		if tlsCA != "" {
			tlsEnv = " MEMBUS_NATS_TLS_CA=" + tlsCA
		}
		fmt.Fprintf(&ready, "  plugin:    MEMBUS_NATS_URL=%s%s MEMBUS_NATS_TOKEN=%s (--nats-auth token: every holder of the token reads every tenant; development only)\n", env.NATSURL, tlsEnv, env.Config.NATSToken)
	} else {
		tlsFlag := ""
		if tlsCA != "" {
			tlsFlag = " --nats-tls-ca " + tlsCA
		}
		fmt.Fprintf(&ready, "  plugin:    openclaw membus setup --nats-url %s%s --api-key \"$(membus keys create --account default --role admin --name openclaw)\"\n", env.NATSURL, tlsFlag)
	}
	fmt.Fprintf(&ready, "  data dir:  %s\n", cfg.DataDir)
	_, _ = io.WriteString(stdout, ready.String()) // stdout gone: nothing to tell, membus runs on
	if err := <-done; err != nil {
		logger.Error("membus stopped with an error", "err", err)
		return 1
	}
	logger.Info("membus stopped cleanly")
	return 0
}

// checkListen reports whether the HTTP address can be listened on now.
func checkListen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("cannot listen on %s (%w): is another membus running? change --http-addr / MEMBUS_HTTP_ADDR", addr, err)
	}
	return ln.Close()
}

// devKey creates a key for account "default", user "default" at first start and prints it
// once; later starts say where it went.
func devKey(ctx context.Context, env *app.Env, stdout io.Writer) error {
	n, err := env.Store.CountKeys(ctx)
	if err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	key, _, err := env.Store.CreateKey(ctx, "default", "default", store.RoleUser, "dev key (membus up)")
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "  dev API key (account default, user default; shown once): %s\n", key)
	return nil
}

// serviceCommand is `membus <name>`: one service alone, for a distributed deployment.
func serviceCommand(name string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   name,
		Short: "run the " + name + " service alone (distributed: MEMBUS_NATS_URL, MEMBUS_MYSQL_DSN, MEMBUS_REDIS_URL)",
		Args:  cli.NoArgs,
	}
	load := withConfig(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := load()
		if err != nil {
			return cli.Usagef("%v", err)
		}
		logger := cfg.Logger(cmd.ErrOrStderr(), "")
		ctx, stop := app.SignalContext()
		defer stop()
		err = app.RunService(ctx, cfg, logger, name)
		if errors.Is(err, datadir.ErrInUse) { // a refusal to start, in the words of membus up's
			fmt.Fprintf(cmd.ErrOrStderr(), "membus %s: %v\n", name, err)
			return cli.Exit(1)
		}
		if err != nil {
			logger.Error("stopped with an error", "service", name, "err", err)
			return cli.Exit(1)
		}
		return nil
	}
	return cmd
}
