package gateway_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/store"
)

func TestAuth(t *testing.T) {
	e := newEnv(t)
	calls := e.serve("session.get", respond(contract.SessionMeta{V: 1, SessionID: "s1", Memories: map[string]int{}}))

	tests := []struct {
		name        string
		hdr         map[string]string
		wantStatus  int
		wantCode    string
		wantAccount string
		wantUser    string
	}{
		{name: "no key is 401", hdr: nil, wantStatus: 401, wantCode: "unauthorized"},
		{name: "unknown key is 401", hdr: bearer("mbk_nope"), wantStatus: 401, wantCode: "unauthorized"},
		{name: "revoked key is 401", hdr: bearer(e.revokedKey), wantStatus: 401, wantCode: "unauthorized"},
		{name: "non-bearer Authorization is 401", hdr: map[string]string{"Authorization": "Basic " + e.userKey}, wantStatus: 401, wantCode: "unauthorized"},
		{name: "user key as bearer acts for its user", hdr: bearer(e.userKey), wantStatus: 200, wantAccount: "acme", wantUser: "alice"},
		{name: "user key as X-API-Key acts for its user", hdr: map[string]string{"X-API-Key": e.userKey}, wantStatus: 200, wantAccount: "acme", wantUser: "alice"},
		{name: "user key naming its own user is fine", hdr: map[string]string{"X-API-Key": e.userKey, "X-Membus-User": "alice"}, wantStatus: 200, wantAccount: "acme", wantUser: "alice"},
		{name: "user key naming another user is 403", hdr: map[string]string{"X-API-Key": e.userKey, "X-Membus-User": "bob"}, wantStatus: 403, wantCode: "forbidden"},
		{name: "user key ignores X-Membus-Account", hdr: map[string]string{"X-API-Key": e.userKey, "X-Membus-Account": "globex"}, wantStatus: 200, wantAccount: "acme", wantUser: "alice"},
		{name: "admin key without X-Membus-User is 400", hdr: bearer(e.adminKey), wantStatus: 400, wantCode: "bad_request"},
		{name: "admin key acts for the named user of its account", hdr: map[string]string{"Authorization": "Bearer " + e.adminKey, "X-Membus-User": "bob", "X-Membus-Account": "globex"}, wantStatus: 200, wantAccount: "acme", wantUser: "bob"},
		{name: "operator key is 403 on data routes", hdr: bearer(e.operatorKey), wantStatus: 403, wantCode: "forbidden"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := e.do("GET", "/v1/sessions/s1", nil, tc.hdr)
			if rec.Code != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.wantStatus, rec.Body.String())
			}
			if tc.wantStatus != 200 {
				if code, _ := errorBody(t, rec); code != tc.wantCode {
					t.Fatalf("error code %q, want %q", code, tc.wantCode)
				}
				if tc.wantStatus == 401 && rec.Header().Get("WWW-Authenticate") == "" {
					t.Error("401 without WWW-Authenticate")
				}
				select {
				case c := <-calls:
					t.Fatalf("a refused request reached the bus: %+v", c)
				default:
				}
				return
			}
			c := nextCall(t, calls)
			if c.Account != tc.wantAccount || c.Body["user_id"] != tc.wantUser {
				t.Fatalf("acted for %s|%v, want %s|%s", c.Account, c.Body["user_id"], tc.wantAccount, tc.wantUser)
			}
		})
	}
}

func TestInsecureModeIdentityFromHeaders(t *testing.T) {
	e := newEnv(t, func(s *setup) { s.cfg.InsecureNoAuth = true; s.deps.Keys = nil })
	calls := e.serve("session.get", respond(contract.SessionMeta{V: 1, SessionID: "s1"}))
	tests := []struct {
		name        string
		hdr         map[string]string
		wantStatus  int
		wantAccount string
		wantUser    string
	}{
		{"no headers: account and user default", nil, 200, "default", "default"},
		{"headers name account and user", map[string]string{"X-Membus-Account": "team-1", "X-Membus-User": "u1"}, 200, "team-1", "u1"},
		{"a key is not needed nor looked at", map[string]string{"Authorization": "Bearer whatever", "X-Membus-User": "u2"}, 200, "default", "u2"},
		{"bad account is 400", map[string]string{"X-Membus-Account": "Acme.Corp"}, 400, "", ""},
		{"account with a subject wildcard is 400", map[string]string{"X-Membus-Account": "*"}, 400, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := e.do("GET", "/v1/sessions/s1", nil, tc.hdr)
			if rec.Code != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.wantStatus, rec.Body.String())
			}
			if tc.wantStatus != 200 {
				if code, _ := errorBody(t, rec); code != "bad_request" {
					t.Fatalf("code %q", code)
				}
				return
			}
			c := nextCall(t, calls)
			if c.Account != tc.wantAccount || c.Body["user_id"] != tc.wantUser {
				t.Fatalf("acted for %s|%v, want %s|%s", c.Account, c.Body["user_id"], tc.wantAccount, tc.wantUser)
			}
		})
	}
}

func TestKeyChangesInTheStoreAreHonouredAtOnce(t *testing.T) {
	e := newEnv(t)
	e.serve("session.get", respond(contract.SessionMeta{V: 1, SessionID: "s1"}))
	key, id := e.createKey("acme", "dave", store.RoleUser) // created after the gateway started
	if rec := e.do("GET", "/v1/sessions/s1", nil, bearer(key)); rec.Code != 200 {
		t.Fatalf("new key: %d %s", rec.Code, rec.Body.String())
	}
	if err := e.store.RevokeKey(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if rec := e.do("GET", "/v1/sessions/s1", nil, bearer(key)); rec.Code != 401 {
		t.Fatalf("revoked key: %d, want 401", rec.Code)
	}
}

// failingKeys is a key store that is down.
type failingKeys struct{}

func (failingKeys) LookupKey(context.Context, string) (store.APIKey, error) {
	return store.APIKey{}, errors.New("database is down")
}

func TestKeyStoreDownIs503(t *testing.T) {
	e := newEnv(t, func(s *setup) { s.deps.Keys = failingKeys{} })
	rec := e.do("GET", "/v1/sessions/s1", nil, bearer("anything"))
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503", rec.Code)
	}
	if code, _ := errorBody(t, rec); code != "unavailable" {
		t.Fatalf("code %q", code)
	}
}

func TestOpenRoutesNeedNoKey(t *testing.T) {
	e := newEnv(t)
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		if rec := e.do("GET", path, nil, nil); rec.Code != 200 {
			t.Errorf("%s without a key: %d %s", path, rec.Code, rec.Body.String())
		}
	}
}
