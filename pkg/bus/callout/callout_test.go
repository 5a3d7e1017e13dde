package callout_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/bus/callout"
	"github.com/membus/membus/pkg/bus/embedded"
)

// keysServer starts the embedded server in API-key mode with a responder that knows keys.
func keysServer(t *testing.T, keys map[string]bus.Grant) (url, token string) {
	t.Helper()
	return keysServerTTL(t, 0, func(secret string) (bus.Grant, bool) { g, ok := keys[secret]; return g, ok })
}

// keysServerTTL is keysServer with the users' lifetime and a lookup that may change.
func keysServerTTL(t *testing.T, ttl time.Duration, lookup func(secret string) (bus.Grant, bool)) (url, token string) {
	t.Helper()
	dir := t.TempDir()
	token, err := embedded.LoadOrCreateToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := embedded.Start(embedded.Config{DataDir: dir, Listen: "127.0.0.1:0", Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	nc, err := bus.Connect(ctx, s.ClientURL(), token, "auth")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	issuer, err := callout.IssuerFromToken(token)
	if err != nil {
		t.Fatal(err)
	}
	r, err := callout.Serve(nc, callout.Config{Issuer: issuer, TTL: ttl, Lookup: func(_ context.Context, secret string) (bus.Grant, error) {
		g, ok := lookup(secret)
		if !ok {
			return bus.Grant{}, callout.ErrUnknownKey
		}
		return g, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Stop() })
	return s.ClientURL(), token
}

// connectKey connects a tenant client the way the plugin does: the key as the token, replies
// under the key's inbox prefix.
func connectKey(url, key, keyID string) (*nats.Conn, chan error, error) {
	errs := make(chan error, 16)
	nc, err := nats.Connect(url, nats.Token(key), nats.CustomInboxPrefix(bus.InboxPrefix(keyID)), nats.MaxReconnects(0),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err }))
	return nc, errs, err
}

func TestCalloutBindsKeysToTheirAccountAndUser(t *testing.T) {
	n := bus.Names{Prefix: "membus"}
	url, token := keysServer(t, map[string]bus.Grant{
		"key-a":     {Scope: bus.ScopeAccount, Account: "acme", KeyID: "ka"},
		"key-b":     {Scope: bus.ScopeAccount, Account: "globex", KeyID: "kb"},
		"key-alice": {Scope: bus.ScopeUser, Account: "acme", User: "alice", KeyID: "kal"},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// A service answers every RPC with the subject it was called on and the payload it saw.
	svc, err := bus.Connect(ctx, url, token, "svc")
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	rpc, err := bus.NewRPCServer(svc, n, "recall", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rpc.Stop() }()
	for _, op := range []string{"recall", "erase"} {
		if err := rpc.Handle(op, func(_ context.Context, account string, req micro.Request) {
			_ = req.Respond([]byte(account + " " + string(req.Data())))
		}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, key, keyID, subject, body string
		want                            string // "" = refused
	}{
		{"admin key, own account", "key-a", "ka", n.RPC("acme", "recall"), `{"user_id":"bob"}`, `acme {"user_id":"bob"}`},
		{"admin key, other account", "key-a", "ka", n.RPC("globex", "recall"), `{"user_id":"bob"}`, ""},
		{"other admin key, its account", "key-b", "kb", n.RPC("globex", "recall"), `{}`, `globex {}`},
		{"user key, its user", "key-alice", "kal", n.UserRPC("acme", "alice", "recall"), `{"user_id":"alice"}`, `acme {"user_id":"alice"}`},
		{"user key, payload names another user", "key-alice", "kal", n.UserRPC("acme", "alice", "recall"), `{"user_id":"bob"}`, `acme {"user_id":"alice"}`},
		{"user key, another user's subject", "key-alice", "kal", n.UserRPC("acme", "bob", "recall"), `{}`, ""},
		{"user key, account subject", "key-alice", "kal", n.RPC("acme", "recall"), `{"user_id":"alice"}`, ""},
		{"user key, admin op", "key-alice", "kal", n.UserRPC("acme", "alice", "erase"), `{}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nc, errs, err := connectKey(url, tc.key, tc.keyID)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			timeout := 2 * time.Second
			if tc.want == "" {
				timeout = 500 * time.Millisecond
			}
			msg, err := nc.Request(tc.subject, []byte(tc.body), timeout)
			switch {
			case tc.want == "" && err == nil:
				t.Fatalf("%s answered %q, want refused", tc.subject, msg.Data)
			case tc.want == "":
				requireViolation(t, errs)
			case err != nil:
				t.Fatalf("%s: %v", tc.subject, err)
			case string(msg.Data) != tc.want:
				t.Fatalf("answer %q, want %q", msg.Data, tc.want)
			}
		})
	}
}

// requireViolation waits for the server's permissions violation on the connection.
func requireViolation(t *testing.T, errs chan error) {
	t.Helper()
	select {
	case err := <-errs:
		if !errors.Is(err, nats.ErrPermissionViolation) {
			t.Fatalf("connection error %v, want a permissions violation", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("no permissions violation reported")
	}
}

func TestCalloutRefusesWhatAKeyMayNotDo(t *testing.T) {
	n := bus.Names{Prefix: "membus"}
	url, token := keysServer(t, map[string]bus.Grant{
		"key-a":     {Scope: bus.ScopeAccount, Account: "acme", KeyID: "ka"},
		"key-alice": {Scope: bus.ScopeUser, Account: "acme", User: "alice", KeyID: "kal"},
	})
	t.Run("connect", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			opts []nats.Option
			ok   bool
		}{
			{"unknown key", []nats.Option{nats.Token("nope")}, false},
			{"no credential", nil, false},
			{"the services' token alone", []nats.Option{nats.Token(token)}, false},
			{"the service user without the token", []nats.Option{nats.UserInfo(bus.ServiceUser, "wrong")}, false},
			{"the service user", []nats.Option{nats.UserInfo(bus.ServiceUser, token)}, true},
			{"a key as the password", []nats.Option{nats.UserInfo("plugin", "key-a")}, true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				nc, err := nats.Connect(url, append(tc.opts, nats.MaxReconnects(0))...)
				if err == nil {
					nc.Close()
				}
				if (err == nil) != tc.ok {
					t.Fatalf("connect err = %v, want ok=%v", err, tc.ok)
				}
				if err != nil && !errors.Is(err, nats.ErrAuthorization) && !strings.Contains(strings.ToLower(err.Error()), "authorization") {
					t.Fatalf("refused with %v, want an authorization error", err)
				}
			})
		}
	})
	t.Run("subjects", func(t *testing.T) {
		for _, tc := range []struct {
			name, key, keyID string
			sub, pub         string
		}{
			{"admin key publishes another account's turns", "key-a", "ka", "", n.Turns("globex", "s1")},
			{"user key publishes turns", "key-alice", "kal", "", n.Turns("acme", "s1")},
			{"admin key reads the turns", "key-a", "ka", n.Turns("acme", "s1"), ""},
			{"admin key reads everything", "key-a", "ka", ">", ""},
			{"admin key reads another key's replies", "key-a", "ka", bus.InboxPrefix("kal") + ".>", ""},
			{"admin key reads the default inboxes", "key-a", "ka", "_INBOX.>", ""},
			{"admin key reads the auth requests", "key-a", "ka", callout.Subject, ""},
			{"admin key uses the JetStream API", "key-a", "ka", "", "$JS.API.STREAM.LIST"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				nc, errs, err := connectKey(url, tc.key, tc.keyID)
				if err != nil {
					t.Fatal(err)
				}
				defer nc.Close()
				if tc.sub != "" {
					if _, err := nc.SubscribeSync(tc.sub); err != nil {
						t.Fatal(err)
					}
				} else if err := nc.Publish(tc.pub, []byte("{}")); err != nil {
					t.Fatal(err)
				}
				_ = nc.Flush()
				requireViolation(t, errs)
			})
		}
	})
	t.Run("admin key publishes its account's turns", func(t *testing.T) {
		nc, errs, err := connectKey(url, "key-a", "ka")
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		if err := nc.Publish(n.Turns("acme", "s1"), []byte("{}")); err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-errs:
			t.Fatalf("publishing its own turns: %v", err)
		case <-time.After(300 * time.Millisecond):
		}
	})
}

// TestRevokedKeyLosesTheBus: a connection is authorized for the user's lifetime; when it ends
// the server drops the connection, and the reconnect of a revoked key is refused.
func TestRevokedKeyLosesTheBus(t *testing.T) {
	var revoked atomic.Bool
	url, _ := keysServerTTL(t, 2*time.Second, func(secret string) (bus.Grant, bool) {
		if secret != "key-a" || revoked.Load() {
			return bus.Grant{}, false
		}
		return bus.Grant{Scope: bus.ScopeAccount, Account: "acme", KeyID: "ka"}, true
	})
	closed := make(chan struct{})
	nc, err := nats.Connect(url, nats.Token("key-a"), nats.CustomInboxPrefix(bus.InboxPrefix("ka")),
		nats.ReconnectWait(100*time.Millisecond), nats.MaxReconnects(3),
		nats.ClosedHandler(func(*nats.Conn) { close(closed) }), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	revoked.Store(true)
	select {
	case <-closed:
		if nc.LastError() == nil {
			t.Fatal("closed without an error")
		}
		t.Logf("the revoked key's connection ended: %v", nc.LastError())
	case <-time.After(15 * time.Second):
		t.Fatal("the revoked key's connection is still up 15 s after its user expired")
	}
}
