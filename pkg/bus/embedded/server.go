// Package embedded runs the NATS server of `membus up` in-process (JetStream in the data dir,
// token auth) and keeps its token. Only the composition root imports it: services connect to
// NATS as clients and never see the server.
package embedded

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"golang.org/x/crypto/bcrypt"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/bus/callout"
)

// DefaultListen is the embedded server's default address (loopback only).
const DefaultListen = "127.0.0.1:4222"

// Config configures the NATS server `membus up` runs in-process.
type Config struct {
	DataDir string // JetStream is stored under DataDir/nats
	Listen  string // host:port; default 127.0.0.1:4222; port 0 picks a free port
	Token   string // the services' secret; none when "" (no auth at all)
	Auth    string // with a Token: AuthKeys (default) or AuthToken
	Sync    string // "always" (default) or "interval"
	// Names are the deployment's subjects, which the service users' permissions name
	// (AuthKeys only).
	Names bus.Names
	// TLS, when set, is the server's certificate: every client must then connect over TLS.
	TLS    *tls.Config
	Logger *slog.Logger
}

// Auth modes of the embedded server.
const (
	// AuthKeys: membus's services connect as bus.ServiceUser with the token (`membus up`) or,
	// run alone, as their own service user with bus.ServicePermissions; every other client
	// connects with an API key, which the auth callout (package callout) binds to its account
	// or user.
	AuthKeys = "keys"
	// AuthToken: every holder of the token may publish and subscribe anything, every tenant
	// included. For development only.
	AuthToken = "token"
)

// ErrListen is returned (wrapped) when the embedded server cannot listen on its address.
var ErrListen = errors.New("nats listen address unavailable")

// Start starts a JetStream-enabled NATS server and waits until it accepts connections.
// JetStream fsyncs every write unless Sync is "interval" (docs/design.md §7).
func Start(cfg Config) (*server.Server, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("embedded nats: DataDir is required")
	}
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	switch cfg.Sync {
	case "", "always", "interval":
	default:
		return nil, fmt.Errorf("embedded nats: sync %q: want always or interval", cfg.Sync)
	}
	host, portStr, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: listen %q: want host:port: %w", cfg.Listen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return nil, fmt.Errorf("embedded nats: listen %q: bad port", cfg.Listen)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	} else {
		// The server only logs a failed listen; check first for a clear error.
		ln, err := net.Listen("tcp", cfg.Listen)
		if err != nil {
			return nil, fmt.Errorf("%w: cannot listen on %s (%w): is another membus or nats-server running? change --nats-listen / MEMBUS_NATS_LISTEN", ErrListen, cfg.Listen, err)
		}
		_ = ln.Close()
	}
	switch cfg.Auth {
	case "":
		cfg.Auth = AuthKeys
	case AuthKeys, AuthToken:
	default:
		return nil, fmt.Errorf("embedded nats: auth %q: want %s or %s", cfg.Auth, AuthKeys, AuthToken)
	}
	storeDir := filepath.Join(cfg.DataDir, "nats")
	if err := os.MkdirAll(storeDir, 0o700); err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	opts := &server.Options{
		ServerName: "membus-embedded",
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   storeDir,
		SyncAlways: cfg.Sync != "interval",
		NoSigs:     true,
		HTTPPort:   0,
	}
	switch {
	case cfg.Token == "":
	case cfg.Auth == AuthToken:
		opts.Authorization = cfg.Token
	default:
		issuer, err := callout.IssuerPublicKey(cfg.Token)
		if err != nil {
			return nil, fmt.Errorf("embedded nats: %w", err)
		}
		// The server compares a bcrypt hash (and warns of a plaintext one); the lowest cost
		// suffices for a 256-bit random token and keeps the services' connects fast.
		hash, err := bcrypt.GenerateFromPassword([]byte(cfg.Token), bcrypt.MinCost)
		if err != nil {
			return nil, fmt.Errorf("embedded nats: the token (MEMBUS_NATS_TOKEN) must be at most 72 bytes: %w", err)
		}
		users, err := serviceUsers(cfg.Names, cfg.Token)
		if err != nil {
			return nil, fmt.Errorf("embedded nats: %w", err)
		}
		opts.Users = append([]*server.User{{Username: bus.ServiceUser, Password: string(hash)}}, users...)
		auth := make([]string, 0, len(opts.Users))
		for _, u := range opts.Users {
			auth = append(auth, u.Username)
		}
		opts.AuthCallout = &server.AuthCallout{Issuer: issuer, AuthUsers: auth}
	}
	if cfg.TLS != nil {
		opts.TLSConfig, opts.TLS, opts.TLSTimeout = cfg.TLS, true, 5
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	if cfg.Logger != nil {
		s.SetLoggerV2(slogAdapter{cfg.Logger.With("component", "nats")}, false, false, false)
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		return nil, fmt.Errorf("%w: embedded nats on %s not ready after 10s: change --nats-listen / MEMBUS_NATS_LISTEN if the port is taken", ErrListen, cfg.Listen)
	}
	return s, nil
}

// LoadOrCreateToken returns the token kept in <dataDir>/nats.token, creating it (32 random
// bytes, hex, mode 0600) at first start.
func LoadOrCreateToken(dataDir string) (string, error) {
	path := filepath.Join(dataDir, "nats.token")
	if b, err := os.ReadFile(path); err == nil {
		tok := strings.TrimSpace(string(b))
		if tok == "" {
			return "", fmt.Errorf("nats token %s is empty: delete it to create a new one", path)
		}
		return tok, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("read nats token: %w", err)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", fmt.Errorf("create nats token: %w", err)
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("create nats token: %w", err)
	}
	tok := hex.EncodeToString(raw[:])
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return LoadOrCreateToken(dataDir) // another process created it first
	}
	if err != nil {
		return "", fmt.Errorf("create nats token: %w", err)
	}
	if _, err := f.WriteString(tok + "\n"); err != nil {
		f.Close()
		return "", fmt.Errorf("write nats token: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("write nats token: %w", err)
	}
	return tok, nil
}

// serviceUsers are the service users of the deployment, as bus.Names.AuthConf lists them in a
// standalone server's config: each with its password derived from the token (a bcrypt hash of
// it) and its permissions.
func serviceUsers(n bus.Names, token string) ([]*server.User, error) {
	var out []*server.User
	for _, svc := range bus.Services {
		pass, err := bus.ServicePassword(token, svc)
		if err != nil {
			return nil, err
		}
		hash, err := bcrypt.GenerateFromPassword([]byte(pass), bcrypt.MinCost)
		if err != nil {
			return nil, fmt.Errorf("service user %s: %w", svc, err)
		}
		perms, err := n.ServicePermissions(svc)
		if err != nil {
			return nil, err
		}
		sp := &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: perms.Publish},
			Subscribe: &server.SubjectPermission{Allow: perms.Subscribe},
		}
		if perms.Responses > 0 {
			sp.Response = &server.ResponsePermission{MaxMsgs: 1, Expires: perms.Responses}
		}
		out = append(out, &server.User{Username: n.ServiceUser(svc), Password: string(hash), Permissions: sp})
	}
	return out, nil
}

// slogAdapter routes the NATS server's log to slog (Fatalf is logged, never exits). Its notices
// (the start-up banner among them) are debug records: an operator of membus needs none of them.
type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) Noticef(format string, v ...any) { a.l.Debug(fmt.Sprintf(format, v...)) }
func (a slogAdapter) Warnf(format string, v ...any)   { a.l.Warn(fmt.Sprintf(format, v...)) }
func (a slogAdapter) Fatalf(format string, v ...any)  { a.l.Error(fmt.Sprintf(format, v...)) }
func (a slogAdapter) Errorf(format string, v ...any)  { a.l.Error(fmt.Sprintf(format, v...)) }
func (a slogAdapter) Debugf(format string, v ...any)  { a.l.Debug(fmt.Sprintf(format, v...)) }
func (a slogAdapter) Tracef(format string, v ...any)  { a.l.Debug(fmt.Sprintf(format, v...)) }
