package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/config"
	"github.com/membus/membus/pkg/store"
)

// OpenStore opens the SQL store the server uses (MEMBUS_MYSQL_DSN, else <data>/membus.db),
// for tools such as `membus keys` that run beside a live server.
func OpenStore(ctx context.Context, cfg config.Config) (*store.Store, error) {
	if cfg.MySQLDSN != "" {
		return store.OpenMySQL(ctx, cfg.MySQLDSN)
	}
	path := filepath.Join(cfg.DataDir, "membus.db")
	if _, err := os.Stat(cfg.DataDir); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("data dir %s does not exist: start `membus up` once, or pass --data-dir / MEMBUS_DATA_DIR", cfg.DataDir)
	}
	return store.OpenSQLite(ctx, path)
}

// Dial connects to the running deployment's NATS as every CLI command does: MEMBUS_NATS_URL
// (--nats-url), else the embedded server of `membus up` on MEMBUS_NATS_LISTEN. The token is
// MEMBUS_NATS_TOKEN (--nats-token), else the one `membus up` keeps in the data dir. Errors name
// the flag that fixes them.
func Dial(ctx context.Context, cfg config.Config, name string) (*nats.Conn, jetstream.JetStream, bus.Names, error) {
	names, err := bus.NewNames(cfg.SubjectPrefix)
	if err != nil {
		return nil, nil, names, err
	}
	url, token := cfg.NATSURL, cfg.NATSToken
	if url == "" {
		url = "nats://" + cfg.NATSListen
	}
	if token == "" {
		b, err := os.ReadFile(filepath.Join(cfg.DataDir, "nats.token"))
		switch {
		case err == nil:
			token = strings.TrimSpace(string(b))
		case cfg.NATSURL == "":
			return nil, nil, names, fmt.Errorf("no NATS token in %s: is `membus up` running with this --data-dir? "+
				"Else pass --nats-url and --nats-token (MEMBUS_NATS_URL, MEMBUS_NATS_TOKEN: the URL is on `membus up`'s plugin: line, the token in its data dir's nats.token): %w", cfg.DataDir, err)
		}
	}
	opts := []nats.Option{nats.MaxReconnects(2)}
	clientTLS, err := NATSClientTLS(cfg)
	if err != nil {
		return nil, nil, names, err
	}
	if clientTLS != nil {
		opts = append(opts, nats.Secure(clientTLS))
	}
	nc, err := bus.Connect(ctx, url, token, name, opts...)
	if errors.Is(err, nats.ErrAuthorization) || (err != nil && strings.Contains(strings.ToLower(err.Error()), "authorization")) {
		return nil, nil, names, fmt.Errorf("connect to NATS at %s: the server refused the token: pass --nats-token / MEMBUS_NATS_TOKEN "+
			"(the contents of the running membus up's <data dir>/nats.token), or --data-dir of the running membus up: %w", url, err)
	}
	if err != nil {
		return nil, nil, names, fmt.Errorf("connect to NATS at %s: is membus running? (--nats-url / MEMBUS_NATS_URL, or --nats-listen of membus up): %w", url, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, names, err
	}
	return nc, js, names, nil
}
