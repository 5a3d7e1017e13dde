package app

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/config"
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
