// Package callout answers nats-server's auth callout: a client that connects with an API key
// (as its token, or as its password) gets a user bound to the key's account, or user, with the
// subject permissions of bus.Names.Permissions. membus's own processes connect as
// bus.ServiceUser or as their service's own user (bus.Names.ServiceUser), auth users of the
// server config, and never reach the callout.
package callout

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/membus/membus/pkg/bus"
)

// Subject is where nats-server sends authorization requests.
const Subject = "$SYS.REQ.USER.AUTH"

// globalAccount is the account of a server configured without accounts.
const globalAccount = "$G"

// DefaultTTL is how long an issued user stays valid: a revoked key loses the bus within it
// (the server disconnects the user when it expires; the reconnect asks again).
const DefaultTTL = 5 * time.Minute

// ErrUnknownKey is what a Lookup returns for a secret that names no active key.
var ErrUnknownKey = errors.New("unknown or revoked API key")

// Lookup resolves a presented API key to what it grants.
type Lookup func(ctx context.Context, secret string) (bus.Grant, error)

// Config configures the responder.
type Config struct {
	Names  bus.Names
	Issuer nkeys.KeyPair // signs the responses and the users; its public key is the server's auth_callout issuer
	Lookup Lookup
	TTL    time.Duration // default DefaultTTL
	Logger *slog.Logger
	Now    func() time.Time
}

// Responder answers authorization requests until Stop.
type Responder struct {
	cfg Config
	sub *nats.Subscription
}

// Serve subscribes nc (connected as bus.ServiceUser, or as the gateway's own user, whose
// permissions allow the callout subject and its replies) to the callout subject. Replicas share the
// requests through a queue group.
func Serve(nc *nats.Conn, cfg Config) (*Responder, error) {
	if cfg.Issuer == nil || cfg.Lookup == nil {
		return nil, errors.New("auth callout: Issuer and Lookup are required")
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	r := &Responder{cfg: cfg}
	sub, err := nc.QueueSubscribe(Subject, "membus-auth", r.handle)
	if err != nil {
		return nil, fmt.Errorf("auth callout: subscribe %s: %w", Subject, err)
	}
	if err := nc.Flush(); err != nil {
		return nil, fmt.Errorf("auth callout: %w", err)
	}
	r.sub = sub
	return r, nil
}

// Stop unsubscribes.
func (r *Responder) Stop() error { return r.sub.Unsubscribe() }

// lookupTimeout bounds one key lookup: the server waits for the answer before it lets the
// client in (its own timeout is 2 s by default).
const lookupTimeout = 1500 * time.Millisecond

func (r *Responder) handle(m *nats.Msg) {
	req, err := jwt.DecodeAuthorizationRequestClaims(string(m.Data))
	if err != nil {
		r.cfg.Logger.Warn("auth callout: unreadable request", "error", err.Error())
		return // the server times the client out
	}
	ujwt, reason := r.authorize(req)
	resp := jwt.NewAuthorizationResponseClaims(req.UserNkey)
	resp.Audience = req.Server.ID
	resp.Jwt = ujwt
	resp.Error = reason
	tok, err := resp.Encode(r.cfg.Issuer)
	if err != nil {
		r.cfg.Logger.Error("auth callout: sign the response", "error", err.Error())
		return
	}
	if err := m.Respond([]byte(tok)); err != nil {
		r.cfg.Logger.Warn("auth callout: respond", "error", err.Error())
	}
}

// authorize returns the signed user for a request, or the reason it is refused (which the
// server logs; the client sees "authorization violation").
func (r *Responder) authorize(req *jwt.AuthorizationRequestClaims) (string, string) {
	secret := req.ConnectOptions.Token
	if secret == "" {
		secret = req.ConnectOptions.Password
	}
	if secret == "" {
		return "", "no API key: connect with the key as the token (plugin config apiKey)"
	}
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	g, err := r.cfg.Lookup(ctx, secret)
	if errors.Is(err, ErrUnknownKey) {
		return "", ErrUnknownKey.Error()
	}
	if err != nil {
		r.cfg.Logger.Warn("auth callout: key lookup failed", "error", err.Error())
		return "", "the key store is unavailable; retry"
	}
	perms, err := r.cfg.Names.Permissions(g)
	if err != nil {
		r.cfg.Logger.Error("auth callout: key grants nothing expressible", "key_id", g.KeyID, "error", err.Error())
		return "", "the API key cannot be used on the bus"
	}
	uc := jwt.NewUserClaims(req.UserNkey)
	uc.Audience = globalAccount
	uc.Name = "key " + g.KeyID
	uc.Expires = r.cfg.Now().Add(r.cfg.TTL).Unix()
	uc.Pub.Allow.Add(perms.Publish...)
	uc.Sub.Allow.Add(perms.Subscribe...)
	ujwt, err := uc.Encode(r.cfg.Issuer)
	if err != nil {
		r.cfg.Logger.Error("auth callout: sign the user", "error", err.Error())
		return "", "internal error"
	}
	return ujwt, ""
}

// IssuerFromToken derives the callout's account key pair from the deployment's NATS token, so
// every holder of the token (the services) can answer and the server config needs only the
// public key (IssuerPublicKey).
func IssuerFromToken(token string) (nkeys.KeyPair, error) {
	if token == "" {
		return nil, errors.New("auth callout: the NATS token is empty")
	}
	seed := sha256.Sum256([]byte("membus nats auth callout issuer\x00" + token))
	kp, err := nkeys.FromRawSeed(nkeys.PrefixByteAccount, seed[:])
	if err != nil {
		return nil, fmt.Errorf("auth callout: derive the issuer: %w", err)
	}
	return kp, nil
}

// IssuerPublicKey is the auth_callout issuer a server config names for token.
func IssuerPublicKey(token string) (string, error) {
	kp, err := IssuerFromToken(token)
	if err != nil {
		return "", err
	}
	return kp.PublicKey()
}
