package bus

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
)

var updateConf = flag.Bool("update-nats-conf", false, "rewrite the authorization block of deploy/nats/nats-*.conf")

// TestDeployNATSConfsHoldTheGeneratedAuth: the authorization block of each deploy/ NATS config
// is exactly what `membus keys nats-auth` prints, so the service users' permissions of the
// cluster are those of ServicePermissions, never a hand-edited copy (regenerate with
// go test ./bus -run TestDeployNATSConfs -update-nats-conf).
func TestDeployNATSConfsHoldTheGeneratedAuth(t *testing.T) {
	want, err := Names{}.AuthConf()
	if err != nil {
		t.Fatal(err)
	}
	paths, err := filepath.Glob(filepath.Join("..", "..", "deploy", "nats", "nats-*.conf"))
	if err != nil || len(paths) != 3 {
		t.Fatalf("deploy/nats/nats-*.conf: %v %v, want the three nodes' configs", paths, err)
	}
	for _, path := range paths {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		conf := string(raw)
		begin, end := strings.Index(conf, AuthConfBegin), strings.Index(conf, AuthConfEnd)
		if begin < 0 || end < begin {
			t.Errorf("%s lacks the markers of the generated block:\n%s\n%s", path, AuthConfBegin, AuthConfEnd)
			continue
		}
		got := conf[begin : end+len(AuthConfEnd)+1]
		if got == want {
			continue
		}
		if *updateConf {
			if err := os.WriteFile(path, []byte(conf[:begin]+want+conf[end+len(AuthConfEnd)+1:]), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("%s: the authorization block differs from `membus keys nats-auth`; run go test ./bus -run TestDeployNATSConfs -update-nats-conf (in pkg/).\nwant:\n%s", path, want)
	}
}

// TestAuthConfParses: nats-server reads the generated block back as the users and permissions
// ServicePermissions lists, the passwords and issuer taken from the environment.
func TestAuthConfParses(t *testing.T) {
	n := Names{Prefix: "acme_1"}
	block, err := n.AuthConf()
	if err != nil {
		t.Fatal(err)
	}
	kp, err := nkeys.CreateAccount()
	if err != nil {
		t.Fatal(err)
	}
	issuer, err := kp.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(ConfTokenVar, "tok")
	t.Setenv(ConfIssuerVar, issuer)
	for _, svc := range Services {
		t.Setenv(ConfPasswordVar(svc), "pass-"+svc)
	}
	path := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(path, []byte(block), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatalf("nats-server cannot read the block: %v\n%s", err, block)
	}
	if opts.AuthCallout == nil || opts.AuthCallout.Issuer != issuer {
		t.Fatalf("auth_callout = %+v, want issuer %s", opts.AuthCallout, issuer)
	}
	users := map[string]*server.User{}
	for _, u := range opts.Users {
		users[u.Username] = u
	}
	if u := users[ServiceUser]; u == nil || u.Password != "tok" || u.Permissions != nil {
		t.Errorf("user %s = %+v, want the token and every permission", ServiceUser, u)
	}
	wantAuth := []string{ServiceUser}
	for _, svc := range Services {
		name := n.ServiceUser(svc)
		wantAuth = append(wantAuth, name)
		u := users[name]
		if u == nil {
			t.Errorf("no user %s", name)
			continue
		}
		perms, err := n.ServicePermissions(svc)
		if err != nil {
			t.Fatal(err)
		}
		if u.Password != "pass-"+svc {
			t.Errorf("%s: password %q, want $%s", name, u.Password, ConfPasswordVar(svc))
		}
		if u.Permissions == nil || !slices.Equal(u.Permissions.Publish.Allow, perms.Publish) || !slices.Equal(u.Permissions.Subscribe.Allow, perms.Subscribe) {
			t.Errorf("%s: permissions %+v, want %+v", name, u.Permissions, perms)
			continue
		}
		switch r := u.Permissions.Response; {
		case perms.Responses == 0 && r != nil:
			t.Errorf("%s: allow_responses %+v, want none", name, r)
		case perms.Responses > 0 && (r == nil || r.MaxMsgs != 1 || r.Expires != perms.Responses):
			t.Errorf("%s: allow_responses %+v, want one answer within %s", name, r, perms.Responses)
		}
	}
	if !slices.Equal(opts.AuthCallout.AuthUsers, wantAuth) {
		t.Errorf("auth_users = %v, want %v", opts.AuthCallout.AuthUsers, wantAuth)
	}
}

// TestDerivedPasswordsSurviveTheConfig: nats-server parses a variable's value as config, so a
// derived password must come back as the same string whatever the token (one starting with "-"
// or digits would be read as a number, or fail).
func TestDerivedPasswordsSurviveTheConfig(t *testing.T) {
	block, err := Names{}.AuthConf()
	if err != nil {
		t.Fatal(err)
	}
	kp, err := nkeys.CreateAccount()
	if err != nil {
		t.Fatal(err)
	}
	issuer, err := kp.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(ConfIssuerVar, issuer)
	t.Setenv(ConfTokenVar, "tok")
	path := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(path, []byte(block), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := range 64 {
		token := fmt.Sprintf("token-%d", i)
		want := map[string]string{}
		for _, svc := range Services {
			p, err := ServicePassword(token, svc)
			if err != nil {
				t.Fatal(err)
			}
			t.Setenv(ConfPasswordVar(svc), p)
			want[Names{}.ServiceUser(svc)] = p
		}
		opts, err := server.ProcessConfigFile(path)
		if err != nil {
			t.Fatalf("token %q: %v", token, err)
		}
		for _, u := range opts.Users {
			if w, ok := want[u.Username]; ok && u.Password != w {
				t.Errorf("token %q: %s's password reads back as %q, want %q", token, u.Username, u.Password, w)
			}
		}
	}
}

// TestServicePermissionsNeverOpenEverything: no service user gets a full wildcard, the whole
// JetStream API or the tenants' inboxes, whatever the prefix.
func TestServicePermissionsNeverOpenEverything(t *testing.T) {
	for _, prefix := range []string{"membus", "acme_1"} {
		n := Names{Prefix: prefix}
		for _, svc := range Services {
			perms, err := n.ServicePermissions(svc)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range append(append([]string{}, perms.Publish...), perms.Subscribe...) {
				switch {
				case s == ">", s == "$JS.API.>", s == "$JS.>", s == "_INBOX.>", s == prefix+".>", strings.HasPrefix(s, "*"), strings.HasPrefix(s, "$SYS.>"):
					t.Errorf("%s/%s: %q opens too much", prefix, svc, s)
				case strings.HasPrefix(s, "_INBOX.") && !strings.HasPrefix(s, InboxPrefix(n.ServiceUser(svc))+"."):
					t.Errorf("%s/%s: %q is another credential's inbox", prefix, svc, s)
				}
			}
		}
	}
	if _, err := (Names{}).ServicePermissions("billing"); err == nil {
		t.Error("an unknown service got permissions")
	}
}

func TestServicePassword(t *testing.T) {
	a, err := ServicePassword("token-1", ServiceIngest)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		token   string
		service string
		same    bool
	}{
		{"the same token and service give the same password", "token-1", ServiceIngest, true},
		{"another service gets another password", "token-1", ServiceRecall, false},
		{"another token gives another password", "token-2", ServiceIngest, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := ServicePassword(tc.token, tc.service)
			if err != nil {
				t.Fatal(err)
			}
			if (a == b) != tc.same || len(b) != 46 || !strings.HasPrefix(b, "mb-") || strings.Contains(b, tc.token) {
				t.Errorf("ServicePassword(%q, %q) = %q (ingest's with token-1: %q)", tc.token, tc.service, b, a)
			}
		})
	}
	if _, err := ServicePassword("", ServiceIngest); err == nil {
		t.Error("a password from an empty token")
	}
}
