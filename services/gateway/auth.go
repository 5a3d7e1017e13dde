package gateway

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/services/gateway/request"
)

// Identity headers (docs/design.md §11).
const (
	headerAPIKey  = "X-API-Key"
	headerAccount = "X-Membus-Account" // insecure mode only
	headerUser    = "X-Membus-User"    // admin keys and insecure mode
)

// insecureDefault is the account and user of insecure mode when the headers are absent.
const insecureDefault = "default"

// keyLookupTimeout bounds one API-key lookup.
const keyLookupTimeout = 5 * time.Second

// identity is who a data request acts for. The account comes from the key (or the insecure
// headers), never from the URL or the body.
type identity struct {
	Account string
	User    string // "" for operator keys and for admin keys on ops routes
	KeyID   string // "" in insecure mode
	Role    string // store.RoleUser, RoleAdmin, RoleOperator; RoleAdmin in insecure mode
}

// What a route accepts.
type access int

const (
	accessData  access = iota // user and admin keys, acting for one user
	accessAdmin               // admin keys only (and insecure mode), acting for a user named by the route
	accessOps                 // admin keys (their account) and operator keys (every account)
)

// rateKey is the rate limit bucket of the caller: the API key, or the insecure identity.
func (id identity) rateKey() string {
	if id.KeyID != "" {
		return "key:" + id.KeyID
	}
	return "insecure:" + id.Account + ":" + id.User
}

// authed resolves the caller's identity and runs h for it. Lookups go to the key store on
// every request (no cache): a key created or revoked in the store is honoured at once.
func (s *Service) authed(h func(http.ResponseWriter, *http.Request, identity)) http.HandlerFunc {
	return s.guard(accessData, h)
}

// adminAuthed is authed for routes only an admin key may use (erasing a user).
func (s *Service) adminAuthed(h func(http.ResponseWriter, *http.Request, identity)) http.HandlerFunc {
	return s.guard(accessAdmin, h)
}

// opsAuthed is authed for the ops figures: admin keys see their account, operator keys every
// account; user keys are refused.
func (s *Service) opsAuthed(h func(http.ResponseWriter, *http.Request, identity)) http.HandlerFunc {
	return s.guard(accessOps, h)
}

// guard resolves the identity for the route's access, applies the per-key rate limit and runs h.
func (s *Service) guard(a access, h func(http.ResponseWriter, *http.Request, identity)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, aerr := s.identify(r, a)
		if aerr != nil {
			if aerr.Status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="membus"`)
			}
			writeError(w, aerr)
			return
		}
		if aerr := s.rateLimit(w, r, id); aerr != nil {
			writeError(w, aerr)
			return
		}
		h(w, r, id)
	}
}

func (s *Service) identify(r *http.Request, a access) (identity, *request.Error) {
	if s.cfg.InsecureNoAuth {
		account := headerOr(r, headerAccount, insecureDefault)
		if err := bus.ValidAccount(account); err != nil {
			return identity{}, request.BadRequest(headerAccount + ": " + err.Error())
		}
		user := headerOr(r, headerUser, insecureDefault)
		if err := validUserID(user); err != nil {
			return identity{}, err
		}
		return identity{Account: account, User: user, Role: store.RoleAdmin}, nil
	}

	secret, aerr := presentedKey(r)
	if aerr != nil {
		return identity{}, aerr
	}
	ctx, cancel := context.WithTimeout(r.Context(), keyLookupTimeout)
	defer cancel()
	key, err := s.deps.Keys.LookupKey(ctx, secret)
	if errors.Is(err, store.ErrNotFound) {
		return identity{}, unauthorized("unknown or revoked API key")
	}
	if err != nil {
		s.log.Warn("api key lookup failed", "error", err.Error())
		return identity{}, unavailable("the key store is unavailable; retry")
	}
	if err := bus.ValidAccount(key.AccountID); err != nil {
		s.log.Error("api key bound to an invalid account", "key_id", key.ID, "error", err.Error())
		return identity{}, &request.Error{Status: http.StatusInternalServerError, Code: codeInternal, Message: "the API key is bound to an invalid account"}
	}

	named := strings.TrimSpace(r.Header.Get(headerUser))
	switch {
	case a == accessOps && (key.Role == store.RoleAdmin || key.Role == store.RoleOperator):
		return identity{Account: key.AccountID, KeyID: key.ID, Role: key.Role}, nil
	case a == accessOps:
		return identity{}, forbidden("ops figures need an admin or operator key")
	case a == accessAdmin && key.Role != store.RoleAdmin:
		return identity{}, forbidden("only an admin key may do this")
	case a == accessAdmin:
		// The route names the user; the admin acts within its own account.
		return identity{Account: key.AccountID, KeyID: key.ID, Role: key.Role}, nil
	}
	switch key.Role {
	case store.RoleUser:
		// A user key acts for its own user only; naming another one is refused.
		if named != "" && named != key.UserID {
			return identity{}, forbidden("a user key acts only for its own user; " + headerUser + " names another")
		}
		if key.UserID == "" {
			return identity{}, &request.Error{Status: http.StatusInternalServerError, Code: codeInternal, Message: "the user key has no user"}
		}
		return identity{Account: key.AccountID, User: key.UserID, KeyID: key.ID, Role: key.Role}, nil
	case store.RoleAdmin:
		if named == "" {
			return identity{}, request.BadRequest("an admin key must name the user with " + headerUser)
		}
		if err := validUserID(named); err != nil {
			return identity{}, err
		}
		return identity{Account: key.AccountID, User: named, KeyID: key.ID, Role: key.Role}, nil
	case store.RoleOperator:
		return identity{}, forbidden("an operator key reads ops figures only, not data routes")
	default:
		return identity{}, forbidden("the API key has an unknown role")
	}
}

// presentedKey reads "Authorization: Bearer <key>", else X-API-Key.
func presentedKey(r *http.Request) (string, *request.Error) {
	if auth := r.Header.Get("Authorization"); auth != "" {
		scheme, key, ok := strings.Cut(strings.TrimSpace(auth), " ")
		key = strings.TrimSpace(key)
		if !ok || !strings.EqualFold(scheme, "Bearer") || key == "" {
			return "", unauthorized("Authorization must be \"Bearer <key>\"")
		}
		return key, nil
	}
	if key := strings.TrimSpace(r.Header.Get(headerAPIKey)); key != "" {
		return key, nil
	}
	return "", unauthorized("an API key is required (Authorization: Bearer <key> or " + headerAPIKey + ")")
}

func headerOr(r *http.Request, name, def string) string {
	if v := strings.TrimSpace(r.Header.Get(name)); v != "" {
		return v
	}
	return def
}

func validUserID(user string) *request.Error {
	if len(user) > request.MaxUserIDLen || !utf8.ValidString(user) {
		return request.BadRequest(headerUser + ": a user id is 1–256 bytes of UTF-8")
	}
	return nil
}

func unauthorized(msg string) *request.Error {
	return &request.Error{Status: http.StatusUnauthorized, Code: codeUnauthorized, Message: msg}
}

func forbidden(msg string) *request.Error {
	return &request.Error{Status: http.StatusForbidden, Code: codeForbidden, Message: msg}
}
