package bus

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// MinServerVersion is the oldest nats-server membus runs against.
const MinServerVersion = "2.10.0"

// ErrServerTooOld is returned (wrapped) by Connect when the server predates MinServerVersion.
var ErrServerTooOld = errors.New("nats server too old")

// ErrNoJetStream is returned (wrapped) by Connect when the server has JetStream disabled.
var ErrNoJetStream = errors.New("jetstream not enabled")

// ServiceUser is the NATS user `membus up` and the operator tools connect as, with the
// deployment's token as its password and every permission. A server in API-key mode (the auth
// callout) lists it among its auth users, so it bypasses the callout; a server in token mode
// ignores it and checks the token. A service run alone connects as its own user instead
// (Names.ServiceUser, ServiceOptions), with only its job's permissions.
const ServiceUser = "membus"

// Connect connects to url (as ServiceUser with token, when token != ""), reconnecting forever, and checks that
// the server is at least MinServerVersion and has JetStream enabled for this account. opts
// are applied after membus's defaults (ServiceOptions there connect as a service's own user).
func Connect(ctx context.Context, url, token, name string, opts ...nats.Option) (*nats.Conn, error) {
	all := []nats.Option{nats.Name(name), nats.MaxReconnects(-1)}
	if token != "" {
		all = append(all, nats.Token(token), nats.UserInfo(ServiceUser, token))
	}
	all = append(all, opts...)
	nc, err := nats.Connect(url, all...)
	if err != nil {
		return nil, fmt.Errorf("connect to nats %s: %w", url, err)
	}
	have := nc.ConnectedServerVersion()
	ok, err := versionAtLeast(have, MinServerVersion)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("connect to nats %s: server version %q: %w", url, have, err)
	}
	if !ok {
		nc.Close()
		return nil, fmt.Errorf("%w: nats-server at %s is %s, membus needs %s or newer: upgrade nats-server (https://github.com/nats-io/nats-server/releases) or use the embedded server (`membus up`)", ErrServerTooOld, url, have, MinServerVersion)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("connect to nats %s: %w", url, err)
	}
	actx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	if _, err := js.AccountInfo(actx); err != nil {
		nc.Close()
		if errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
			return nil, fmt.Errorf("%w on nats-server at %s (%w): start it with -js or add `jetstream {}` to its config", ErrNoJetStream, url, err)
		}
		return nil, fmt.Errorf("connect to nats %s: jetstream account info: %w", url, err)
	}
	return nc, nil
}

// versionAtLeast compares semantic versions ("v" prefix allowed; a pre-release sorts before
// its release, and pre-releases of the same version compare equal).
func versionAtLeast(have, want string) (bool, error) {
	h, hpre, err := parseVersion(have)
	if err != nil {
		return false, err
	}
	w, wpre, err := parseVersion(want)
	if err != nil {
		return false, err
	}
	for i := range h {
		if h[i] != w[i] {
			return h[i] > w[i], nil
		}
	}
	if hpre && !wpre {
		return false, nil
	}
	return true, nil
}

func parseVersion(v string) (nums [3]int, prerelease bool, err error) {
	s := strings.TrimPrefix(strings.TrimSpace(v), "v")
	if i := strings.IndexByte(s, '+'); i >= 0 {
		s = s[:i]
	}
	if i := strings.IndexByte(s, '-'); i >= 0 {
		s, prerelease = s[:i], true
	}
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return nums, false, fmt.Errorf("version %q: want MAJOR.MINOR.PATCH", v)
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return nums, false, fmt.Errorf("version %q: bad number %q", v, p)
		}
		nums[i] = n
	}
	return nums, prerelease, nil
}
