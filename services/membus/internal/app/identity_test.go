package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/config"
	"github.com/membus/membus/pkg/testenv"
)

// TestNATSIdentity: who a process connects to NATS as, by command and settings.
func TestNATSIdentity(t *testing.T) {
	ingestPass, err := bus.ServicePassword("tok", bus.ServiceIngest)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name                      string
		service, user, pass, tok  string
		wantUser, wantPass, inbox string // wantUser "": bus.Connect's own (ServiceUser with the token, or nobody)
		wantErr                   bool
	}{
		{name: "membus up: the user membus with the token (bus.Connect sends it)", tok: "tok"},
		{name: "no token, no password: no credentials (a server without auth)", service: bus.ServiceIngest},
		{name: "a service alone: its own user, the password derived from the token", service: bus.ServiceIngest, tok: "tok",
			wantUser: "membus-ingest", wantPass: ingestPass, inbox: "_INBOX.membus-ingest"},
		{name: "a service handed only its password", service: bus.ServiceIngest, pass: "given",
			wantUser: "membus-ingest", wantPass: "given", inbox: "_INBOX.membus-ingest"},
		{name: "MEMBUS_NATS_USER=membus: the full user again, for an old server config", service: bus.ServiceIngest, user: "membus", tok: "tok"},
		{name: "another service's user by name: its derived password", user: "membus-recall", tok: "tok",
			wantUser: "membus-recall", wantPass: mustPassword(t, "tok", bus.ServiceRecall), inbox: "_INBOX.membus-recall"},
		{name: "a user of no service needs its password", user: "someone", tok: "tok", wantErr: true},
		{name: "a user of no service with its password", user: "someone", pass: "pw",
			wantUser: "someone", wantPass: "pw", inbox: "_INBOX.someone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Defaults()
			cfg.NATSUser, cfg.NATSPassword = tc.user, tc.pass
			e := &Env{Config: cfg, Names: bus.Names{}, service: tc.service}
			opts, err := e.identity(tc.tok)
			if (err != nil) != tc.wantErr {
				t.Fatalf("identity: %v, want error %v", err, tc.wantErr)
			}
			o := nats.GetDefaultOptions()
			for _, opt := range opts {
				if err := opt(&o); err != nil {
					t.Fatal(err)
				}
			}
			if o.User != tc.wantUser || o.Password != tc.wantPass || o.InboxPrefix != tc.inbox {
				t.Errorf("user %q password %q inbox %q; want %q %q %q", o.User, o.Password, o.InboxPrefix, tc.wantUser, tc.wantPass, tc.inbox)
			}
		})
	}
}

func mustPassword(t *testing.T, token, service string) string {
	t.Helper()
	p, err := bus.ServicePassword(token, service)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestServiceAloneOnTheEmbeddedServer: `membus ingest` without MEMBUS_NATS_URL starts the
// embedded server, which knows the service users, and connects as ingest's: the streams are
// ensured and the ingest service runs under its permissions.
func TestServiceAloneOnTheEmbeddedServer(t *testing.T) {
	cfg := config.Defaults()
	cfg.DataDir = t.TempDir()
	cfg.NATSListen = "127.0.0.1:0"
	cfg.NATSSync = "interval"
	cfg.Embedder = "hash"
	env, err := OpenService(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), bus.ServiceIngest)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	if env.NC.Opts.User != "membus-ingest" {
		t.Fatalf("connected as %q, want membus-ingest", env.NC.Opts.User)
	}
	if _, err := Build(env, bus.ServiceIngest); err != nil {
		t.Fatalf("build ingest under its own user: %v", err)
	}
}

// TestEachServiceStartsUnderItsOwnUser: each service run alone on the embedded server starts
// without one refused subscription or publish (the server logs "Violation"): its RPC endpoints
// are exactly bus.RPCOps on subjects its user may subscribe to, its durable consumer and the
// failure bucket are created, the gateway answers the callout.
func TestEachServiceStartsUnderItsOwnUser(t *testing.T) {
	for _, svc := range Services {
		t.Run(svc, func(t *testing.T) {
			var log lockedBuffer
			cfg := config.Defaults()
			cfg.DataDir = t.TempDir()
			cfg.NATSListen = "127.0.0.1:0"
			cfg.HTTPAddr = "127.0.0.1:0"
			cfg.NATSSync = "interval"
			cfg.Embedder = "hash"
			env, err := OpenService(context.Background(), cfg, slog.New(slog.NewTextHandler(&log, nil)), svc)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(env.Close)
			s, err := Build(env, svc)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- env.RunAll(ctx, s) }()
			t.Cleanup(func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("RunAll: %v", err)
				}
			})
			cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer ccancel()
			ops, err := bus.Connect(cctx, env.NATSURL, env.Config.NATSToken, "ops")
			if err != nil {
				t.Fatal(err)
			}
			defer ops.Close()
			perms, err := env.Names.ServicePermissions(svc)
			if err != nil {
				t.Fatal(err)
			}
			if rpcOps := bus.RPCOps(svc); len(rpcOps) > 0 {
				testenv.Eventually(t, 10*time.Second, 50*time.Millisecond, func() error {
					msg, err := ops.Request("$SRV.INFO."+env.Names.Consumer(svc), nil, time.Second)
					if err != nil {
						return err
					}
					var info micro.Info
					if err := json.Unmarshal(msg.Data, &info); err != nil {
						return err
					}
					if len(info.Endpoints) != 2*len(rpcOps) {
						return fmt.Errorf("%d endpoints, want %d (bus.RPCOps %v on account and user subjects)", len(info.Endpoints), 2*len(rpcOps), rpcOps)
					}
					for _, ep := range info.Endpoints {
						if !slices.Contains(perms.Subscribe, ep.Subject) {
							t.Errorf("endpoint %s on %s: not in %s's subscribe permissions", ep.Name, ep.Subject, svc)
						}
					}
					return nil
				})
			}
			if kind := map[string]string{"ingest": bus.StreamTurns, "extract": bus.StreamCommits, "summarizer": bus.StreamEvents}[svc]; kind != "" {
				js, err := jetstream.New(ops)
				if err != nil {
					t.Fatal(err)
				}
				testenv.Eventually(t, 10*time.Second, 50*time.Millisecond, func() error {
					_, err := js.Consumer(cctx, env.Names.Stream(kind), env.Names.Consumer(svc))
					return err
				})
			}
			// The server has handled every subscription and publish of the service before it
			// answers this flush, and logs a refusal as it handles it.
			if err := env.NC.Flush(); err != nil {
				t.Fatal(err)
			}
			if v := log.lines("Violation"); len(v) > 0 {
				t.Errorf("the server refused %s:\n%s", svc, strings.Join(v, "\n"))
			}
		})
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// lines returns the lines holding s.
func (l *lockedBuffer) lines(s string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range strings.Split(l.b.String(), "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}
