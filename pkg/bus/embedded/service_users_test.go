package embedded_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/bus/callout"
	"github.com/membus/membus/pkg/bus/embedded"
	"github.com/membus/membus/pkg/testenv"
)

// permServer is a NATS server that knows the service users, and how to reach it.
type permServer struct {
	url, token string
	n          bus.Names
}

// embeddedPermServer is the embedded server in API-key mode (its users built in Go).
func embeddedPermServer(t *testing.T) permServer {
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
	return permServer{url: s.ClientURL(), token: token}
}

// standalonePermServer is a nats-server child process whose config holds the generated
// authorization block (bus.Names.AuthConf), its secrets in the environment as deploy/ has them.
func standalonePermServer(t *testing.T) permServer {
	t.Helper()
	bin := testenv.NATSServerBinary(t)
	const token = "standalone-test-token"
	n := bus.Names{}
	block, err := n.AuthConf()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().(*net.TCPAddr)
	_ = ln.Close()
	dir := t.TempDir()
	conf := filepath.Join(dir, "nats.conf")
	body := fmt.Sprintf("listen: 127.0.0.1:%d\njetstream { store_dir: %q }\n%s", addr.Port, filepath.Join(dir, "js"), block)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	env, err := serverEnv(token)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-c", conf)
	cmd.Env = append(os.Environ(), env...)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("nats-server output:\n%s", out.String())
		}
	})
	url := fmt.Sprintf("nats://127.0.0.1:%d", addr.Port)
	testenv.Eventually(t, 15*time.Second, 50*time.Millisecond, func() error {
		select {
		case <-exited:
			t.Fatalf("nats-server exited: %s", out.String())
		default:
		}
		c, err := net.DialTimeout("tcp", addr.String(), time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	})
	return permServer{url: url, token: token, n: n}
}

// serverEnv is what deploy/docker-compose.yml gives each NATS node: the token, the services'
// derived passwords and the callout issuer.
func serverEnv(token string) ([]string, error) {
	iss, err := callout.IssuerPublicKey(token)
	if err != nil {
		return nil, err
	}
	env := []string{bus.ConfTokenVar + "=" + token, bus.ConfIssuerVar + "=" + iss}
	for _, svc := range bus.Services {
		p, err := bus.ServicePassword(token, svc)
		if err != nil {
			return nil, err
		}
		env = append(env, bus.ConfPasswordVar(svc)+"="+p)
	}
	return env, nil
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// svcConn is a connection as one service's user that records the server's permission
// violations.
type svcConn struct {
	nc   *nats.Conn
	mu   sync.Mutex
	errs []string
}

func connectService(t *testing.T, s permServer, service string) *svcConn {
	t.Helper()
	pass, err := bus.ServicePassword(s.token, service)
	if err != nil {
		t.Fatal(err)
	}
	c := &svcConn{}
	opts := append(bus.ServiceOptions(s.n.ServiceUser(service), pass), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		c.mu.Lock()
		c.errs = append(c.errs, err.Error())
		c.mu.Unlock()
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// With the token as bus.Connect sends it: the server must pick the service user by name.
	nc, err := bus.Connect(ctx, s.url, s.token, "test-"+service, opts...)
	if err != nil {
		t.Fatalf("connect as %s: %v", s.n.ServiceUser(service), err)
	}
	t.Cleanup(nc.Close)
	c.nc = nc
	return c
}

// refused reports whether the server refused op on subject ("Publish" or "Subscription").
// A last publish the user may never make marks the end: the violations arrive in order, so
// once its own is in, every earlier one is too.
func (c *svcConn) refused(t *testing.T, op, subject string) bool {
	t.Helper()
	const marker = "never.allowed.marker"
	if err := c.nc.Publish(marker, nil); err != nil {
		t.Fatal(err)
	}
	var found bool
	testenv.Eventually(t, 5*time.Second, 10*time.Millisecond, func() error {
		c.mu.Lock()
		defer c.mu.Unlock()
		markerSeen := false
		for _, e := range c.errs {
			if strings.Contains(e, "Publish to \""+marker+"\"") {
				markerSeen = true
			}
			if strings.Contains(e, op+" to \""+subject+"\"") {
				found = true
			}
		}
		if !markerSeen {
			return fmt.Errorf("no violation for the marker yet (errors: %v)", c.errs)
		}
		return nil
	})
	c.mu.Lock()
	c.errs = nil
	c.mu.Unlock()
	return found
}

// TestServiceUserPermissions: each service user may do its job's subjects and is refused the
// others', on the embedded server and on a standalone nats-server run with the generated
// authorization block (the deploy/ configs).
func TestServiceUserPermissions(t *testing.T) {
	type rule struct {
		name     string
		service  string
		op       string // "pub" or "sub"
		subject  string
		mayToo   bool
		services []string // the rule applies to each of these instead of service
	}
	others := []string{bus.ServiceIngest, bus.ServiceExtract, bus.ServiceRecall, bus.ServiceSummarizer}
	rules := []rule{
		{name: "the gateway publishes turns", service: bus.ServiceGateway, op: "pub", subject: "membus.turns.acme.s1", mayToo: true},
		{name: "no other service publishes turns", services: others, op: "pub", subject: "membus.turns.acme.s1"},
		{name: "ingest pulls its own durable on TURNS", service: bus.ServiceIngest, op: "pub", subject: "$JS.API.CONSUMER.MSG.NEXT.MEMBUS_TURNS.membus-ingest", mayToo: true},
		{name: "recall cannot consume the turns stream", service: bus.ServiceRecall, op: "pub", subject: "$JS.API.CONSUMER.MSG.NEXT.MEMBUS_TURNS.membus-ingest"},
		{name: "extract cannot create a consumer on TURNS", service: bus.ServiceExtract, op: "pub", subject: "$JS.API.CONSUMER.CREATE.MEMBUS_TURNS.membus-extract"},
		{name: "extract cannot take over the summarizer's durable", service: bus.ServiceExtract, op: "pub", subject: "$JS.API.CONSUMER.CREATE.MEMBUS_EVENTS.membus-summarizer"},
		{name: "the summarizer cannot ack ingest's messages", service: bus.ServiceSummarizer, op: "pub", subject: "$JS.ACK.MEMBUS_TURNS.membus-ingest.1.1.1.1.0"},
		{name: "ingest publishes commit requests (its relay)", service: bus.ServiceIngest, op: "pub", subject: "membus.commits.acme.s1", mayToo: true},
		{name: "ingest publishes no events", service: bus.ServiceIngest, op: "pub", subject: "membus.events.memory_upserted.acme.s1"},
		{name: "recall publishes no commit requests", service: bus.ServiceRecall, op: "pub", subject: "membus.commits.acme.s1"},
		{name: "the gateway publishes no events", service: bus.ServiceGateway, op: "pub", subject: "membus.events.memory_upserted.acme.s1"},
		{name: "extract announces archives", service: bus.ServiceExtract, op: "pub", subject: "membus.events.archive_created.acme.s1", mayToo: true},
		{name: "nobody else announces archives (the summarizer's work)", services: []string{bus.ServiceGateway, bus.ServiceIngest, bus.ServiceRecall, bus.ServiceSummarizer},
			op: "pub", subject: "membus.events.archive_created.acme.s1"},
		{name: "recall announces an erasure", service: bus.ServiceRecall, op: "pub", subject: "membus.events.erased.acme._", mayToo: true},
		{name: "nobody else announces an erasure (the replicas' indexes follow it)", services: []string{bus.ServiceGateway, bus.ServiceIngest, bus.ServiceExtract, bus.ServiceSummarizer},
			op: "pub", subject: "membus.events.erased.acme._"},
		{name: "the summarizer announces summaries only", service: bus.ServiceSummarizer, op: "pub", subject: "membus.events.memory_upserted.acme.s1"},
		{name: "recall answers recall RPCs", service: bus.ServiceRecall, op: "sub", subject: "membus.rpc.*.recall", mayToo: true},
		{name: "ingest cannot answer recall RPCs", service: bus.ServiceIngest, op: "sub", subject: "membus.rpc.*.recall"},
		{name: "the summarizer cannot answer user-bound recall RPCs", service: bus.ServiceSummarizer, op: "sub", subject: "membus.urpc.*.*.recall"},
		{name: "extract answers commit RPCs", service: bus.ServiceExtract, op: "sub", subject: "membus.rpc.*.commit", mayToo: true},
		{name: "recall cannot answer commit RPCs", service: bus.ServiceRecall, op: "sub", subject: "membus.rpc.*.commit"},
		{name: "only the gateway calls RPCs", services: others, op: "pub", subject: "membus.rpc.acme.recall"},
		{name: "the gateway answers the auth callout", service: bus.ServiceGateway, op: "sub", subject: callout.Subject, mayToo: true},
		{name: "nobody but the gateway answers the auth callout", services: others, op: "sub", subject: callout.Subject},
		{name: "a service reads its own replies", services: bus.Services, op: "sub", subject: "_INBOX.membus-%s.>", mayToo: true},
		{name: "no service reads a tenant's replies", services: bus.Services, op: "sub", subject: "_INBOX.0123456789abcdef.>"},
		{name: "no service reads every inbox", services: bus.Services, op: "sub", subject: "_INBOX.>"},
		{name: "recall securely deletes for erasure", service: bus.ServiceRecall, op: "pub", subject: "$JS.API.STREAM.MSG.DELETE.MEMBUS_TURNS", mayToo: true},
		{name: "nobody else deletes messages", services: []string{bus.ServiceGateway, bus.ServiceIngest, bus.ServiceExtract, bus.ServiceSummarizer}, op: "pub", subject: "$JS.API.STREAM.MSG.DELETE.MEMBUS_TURNS"},
		{name: "no service deletes a stream", services: bus.Services, op: "pub", subject: "$JS.API.STREAM.DELETE.MEMBUS_TURNS"},
		{name: "no service reaches the system account", services: bus.Services, op: "pub", subject: "$SYS.REQ.SERVER.PING"},
		{name: "each service publishes its own metrics", services: bus.Services, op: "pub", subject: "membus.metrics.%s.host-1", mayToo: true},
		{name: "only the gateway reads the metrics feed", services: others, op: "sub", subject: "membus.metrics.>"},
		{name: "only the gateway reads the turns", services: others, op: "sub", subject: "membus.turns.>"},
		{name: "the gateway counts archives for the dashboard", service: bus.ServiceGateway, op: "sub", subject: "membus.events.archive_created.*.*", mayToo: true},
		{name: "the gateway reads no other events", service: bus.ServiceGateway, op: "sub", subject: "membus.events.>"},
	}
	for _, srv := range []struct {
		name  string
		start func(*testing.T) permServer
	}{
		{"embedded", embeddedPermServer},
		{"standalone with the generated config", standalonePermServer},
	} {
		t.Run(srv.name, func(t *testing.T) {
			s := srv.start(t)
			conns := map[string]*svcConn{}
			for _, svc := range bus.Services {
				conns[svc] = connectService(t, s, svc)
			}
			for _, r := range rules {
				services := r.services
				if services == nil {
					services = []string{r.service}
				}
				for _, svc := range services {
					t.Run(r.name+"/"+svc, func(t *testing.T) {
						c := conns[svc]
						subject := r.subject
						if strings.Contains(subject, "%s") {
							subject = fmt.Sprintf(subject, svc)
						}
						op := "Publish"
						if r.op == "sub" {
							op = "Subscription"
							sub, err := c.nc.Subscribe(subject, func(*nats.Msg) {})
							if err != nil {
								t.Fatal(err)
							}
							defer func() { _ = sub.Unsubscribe() }()
						} else if err := c.nc.Publish(subject, nil); err != nil {
							t.Fatal(err)
						}
						if refused := c.refused(t, op, subject); refused == r.mayToo {
							t.Errorf("%s of %s as %s: refused %v, want refused %v", r.op, subject, s.n.ServiceUser(svc), refused, !r.mayToo)
						}
					})
				}
			}
		})
	}
}

// TestServiceUsersAnswerRPCs: a service's RPC answers reach the caller through allow_responses
// (the replies go to inboxes no allow list names), micro's discovery included; a commit RPC's
// late answer, too.
func TestServiceUsersAnswerRPCs(t *testing.T) {
	s := embeddedPermServer(t)
	recall := connectService(t, s, bus.ServiceRecall)
	gateway := connectService(t, s, bus.ServiceGateway)
	srv, err := bus.NewRPCServer(recall.nc, s.n, bus.ServiceRecall, "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	if err := srv.Handle("recall", func(_ context.Context, account string, req micro.Request) {
		time.Sleep(200 * time.Millisecond) // answered later than the request, as a commit is
		_ = bus.RespondJSON(req, map[string]string{"account": account})
	}); err != nil {
		t.Fatal(err)
	}
	if err := recall.nc.Flush(); err != nil { // the endpoint's subscription is in before the call
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var resp map[string]string
	if err := bus.Call(ctx, gateway.nc, s.n.RPC("acme", "recall"), map[string]string{}, &resp); err != nil {
		t.Fatal(err)
	}
	if resp["account"] != "acme" {
		t.Fatalf("answer = %v", resp)
	}
	// micro's discovery answers the operator (`nats micro ls` as the full user "membus").
	ops, err := bus.Connect(ctx, s.url, s.token, "ops")
	if err != nil {
		t.Fatal(err)
	}
	defer ops.Close()
	msg, err := ops.Request("$SRV.PING."+s.n.Consumer(bus.ServiceRecall), nil, 5*time.Second)
	if err != nil {
		t.Fatalf("$SRV.PING: %v", err)
	}
	var ping struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(msg.Data, &ping); err != nil || ping.Name != s.n.Consumer(bus.ServiceRecall) {
		t.Fatalf("$SRV.PING answer %s (%v)", msg.Data, err)
	}
}
