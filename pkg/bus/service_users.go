package bus

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/membus/membus/pkg/contract"
)

// The services of a distributed deployment, each with a NATS user of its own
// (Names.ServiceUser) holding only the permissions of its job (Names.ServicePermissions).
const (
	ServiceGateway    = "gateway"
	ServiceIngest     = "ingest"
	ServiceExtract    = "extract"
	ServiceRecall     = "recall"
	ServiceSummarizer = "summarizer"
)

// Services lists the services that have a NATS user of their own.
var Services = []string{ServiceGateway, ServiceIngest, ServiceExtract, ServiceRecall, ServiceSummarizer}

// ErrUnknownService is returned (wrapped) for a service that has no NATS user.
var ErrUnknownService = errors.New("unknown membus service")

// ResponseWindow is how long a service may answer a request it received (nats-server's
// allow_responses, one message per request). It covers the longest RPC, a synchronous commit
// (timeout_ms up to 10 minutes), and a minute besides.
const ResponseWindow = 11 * time.Minute

// rpcOps are the RPC operations each service serves (bus.RPCServer.Handle): the services
// register exactly these, so a service user may answer these and no others.
var rpcOps = map[string][]string{
	ServiceExtract: {"commit", "memories.import"},
	ServiceRecall: {"recall", "context", "memories.list", "memories.get", "memories.forget", "memories.export", "session.get",
		"archive.search", "archive.expand", "stats", "erase"},
	ServiceSummarizer: {"summary"},
}

// RPCOps returns the operations a service serves.
func RPCOps(service string) []string { return append([]string(nil), rpcOps[service]...) }

// outboxSubjects are the subjects of the outbox rows each service writes, and so relays, after
// "<p>.": a commit request, or an event kind. A process's relay claims only the rows its user may
// publish (Names.OutboxSubjects), so a service that writes a new kind of event must list it
// here, or its rows wait in the outbox (membus_outbox_pending_rows) until a `membus up` relays them.
var outboxSubjects = map[string][]string{
	ServiceIngest: {categoryCommits}, // commit requests at the threshold and when idle
	ServiceExtract: {categoryCommits, // the commit RPC's request
		eventSubject(contract.EventArchiveCreated), eventSubject(contract.EventCommitCompleted),
		eventSubject(contract.EventMemoryUpserted), eventSubject(contract.EventMemorySuperseded)},
	ServiceRecall:     {eventSubject(contract.EventMemoryDeleted), eventSubject(contract.EventErased)}, // forget, erasure
	ServiceSummarizer: {eventSubject(contract.EventSummaryCreated)},                                    // overviews and digests
}

func eventSubject(kind string) string { return categoryEvents + "." + kind }

// consumes is the stream each consuming service reads with its durable (bus.Runner).
var consumes = map[string]string{
	ServiceIngest:     StreamTurns,
	ServiceExtract:    StreamCommits,
	ServiceSummarizer: StreamEvents,
}

// ServiceUser is the NATS user of a service: n.Consumer(service), "membus-ingest" for the
// default prefix, so deployments that share one NATS by prefix have users of their own too.
func (n Names) ServiceUser(service string) string { return n.Consumer(service) }

// ServiceOf returns the service whose user is user, or "" when user is no service's.
func (n Names) ServiceOf(user string) string {
	for _, s := range Services {
		if n.ServiceUser(s) == user {
			return s
		}
	}
	return ""
}

// ServicePassword derives a service user's password from the deployment's NATS token, so the
// services' credentials need no secret besides the token: "mb-" and HMAC-SHA256(token, "membus
// nats service user\x00"+service) in base64url without padding (46 characters). The letters in
// front matter: nats-server parses a config variable's value as a config value, and one that
// starts with "-" or a digit may be read as a number (or fail to parse).
func ServicePassword(token, service string) (string, error) {
	if token == "" {
		return "", errors.New("service password: the NATS token is empty")
	}
	if !knownService(service) {
		return "", fmt.Errorf("%w %q (one of %v)", ErrUnknownService, service, Services)
	}
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write([]byte("membus nats service user\x00" + service))
	return "mb-" + base64.RawURLEncoding.EncodeToString(mac.Sum(nil)), nil
}

// ServiceOptions are the connect options of a service's own user: its name and password and
// its reply inbox, InboxPrefix(user), the only inbox its permissions let it subscribe to.
func ServiceOptions(user, password string) []nats.Option {
	return []nats.Option{nats.UserInfo(user, password), nats.CustomInboxPrefix(InboxPrefix(user))}
}

func knownService(service string) bool {
	for _, s := range Services {
		if s == service {
			return true
		}
	}
	return false
}

// OutboxSubjects are the subject prefixes of the outbox rows a service's relay publishes
// ("<p>.commits.", "<p>.events.summary_created."): none for the gateway, which writes no
// outbox rows.
func (n Names) OutboxSubjects(service string) []string {
	var out []string
	for _, s := range outboxSubjects[service] {
		out = append(out, n.p()+"."+s+".")
	}
	return out
}

// ServicePermissions returns what a service's user may publish and subscribe to: the
// subjects of its own job and the JetStream API of the streams and consumers it uses, never
// another service's consumer (extract only reads ingest's info), RPCs or the tenants' inboxes
// (docs/design.md §3).
func (n Names) ServicePermissions(service string) (Permissions, error) {
	if !knownService(service) {
		return Permissions{}, fmt.Errorf("%w %q (one of %v)", ErrUnknownService, service, Services)
	}
	p := n.p()
	user := n.ServiceUser(service)
	api := "$JS.API."
	var pub, sub []string

	// Every process: the JetStream account check of Connect, EnsureStreams of the four
	// streams at start, its metrics snapshots (the session cache has a registry of its own
	// in every process with Redis) and the replies to its own requests.
	pub = append(pub, api+"INFO")
	for _, kind := range []string{StreamTurns, StreamCommits, StreamEvents, StreamDLQ} {
		s := n.Stream(kind)
		pub = append(pub, api+"STREAM.INFO."+s, api+"STREAM.CREATE."+s, api+"STREAM.UPDATE."+s)
	}
	metrics := p + "." + categoryMetrics + "."
	pub = append(pub, metrics+service+".*", metrics+"sessions.*")
	sub = append(sub, InboxPrefix(user)+".>")

	// The outbox relay publishes the rows the service writes and dead-letters the
	// unpublishable ones.
	if subjects := outboxSubjects[service]; len(subjects) > 0 {
		for _, s := range subjects {
			pub = append(pub, p+"."+s+".>")
		}
		pub = append(pub, p+"."+categoryDLQ+"."+StreamOutbox+".>")
	}

	// A durable consumer (bus.Runner): its own durable only, its acks, its dead letters and
	// the failure-count bucket every runner shares.
	if kind, ok := consumes[service]; ok {
		s, durable := n.Stream(kind), n.Consumer(service)
		pub = append(pub,
			api+"CONSUMER.CREATE."+s+"."+durable, api+"CONSUMER.CREATE."+s+"."+durable+".>",
			api+"CONSUMER.DURABLE.CREATE."+s+"."+durable,
			api+"CONSUMER.INFO."+s+"."+durable, api+"CONSUMER.MSG.NEXT."+s+"."+durable,
			"$JS.ACK."+s+"."+durable+".>",
			p+"."+categoryDLQ+"."+strings.ToLower(kind)+".>")
		kv := n.FailureBucket()
		ks := "KV_" + kv
		pub = append(pub, api+"STREAM.INFO."+ks, api+"STREAM.CREATE."+ks, api+"STREAM.UPDATE."+ks,
			api+"DIRECT.GET."+ks, api+"DIRECT.GET."+ks+".>", api+"STREAM.MSG.GET."+ks, "$KV."+kv+".>")
	}

	// RPCs it serves (bus.RPCServer: micro, a queue group per service), on both the account
	// and the user-bound subjects, and the micro discovery subjects of its service name.
	if ops := rpcOps[service]; len(ops) > 0 {
		for _, op := range ops {
			sub = append(sub, n.RPC("*", op), n.userRPCFilter(op))
		}
		sub = append(sub, "$SRV.*", "$SRV.*."+user, "$SRV.*."+user+".*")
	}

	switch service {
	case ServiceExtract:
		// The commit RPC waits for its commit's completion event, and first for the
		// session's turns to leave the turns work queue (stream info and message get). It
		// reads ingest's ack floor, never its messages or acks: a turn at or below it that is
		// still queued lost its delete and is not waited for.
		sub = append(sub, n.EventFilter(contract.EventCommitCompleted))
		pub = append(pub, api+"STREAM.MSG.GET."+n.Stream(StreamTurns),
			api+"CONSUMER.INFO."+n.Stream(StreamTurns)+"."+n.Consumer(ServiceIngest))
	case ServiceRecall:
		// Erasure finds, securely deletes and purges a session's messages in every stream.
		for _, kind := range []string{StreamTurns, StreamCommits, StreamEvents, StreamDLQ} {
			s := n.Stream(kind)
			pub = append(pub, api+"STREAM.MSG.GET."+s, api+"STREAM.MSG.DELETE."+s, api+"STREAM.PURGE."+s)
		}
		// A replica with a local index follows the event stream with an ordered (or, on a
		// replicated stream, an ephemeral) consumer, whose name the client picks.
		s := n.Stream(StreamEvents)
		pub = append(pub, api+"CONSUMER.CREATE."+s+".>", api+"CONSUMER.INFO."+s+".*", api+"CONSUMER.DELETE."+s+".*",
			api+"CONSUMER.MSG.NEXT."+s+".*")
	case ServiceGateway:
		// The HTTP API publishes turns and calls every RPC of the accounts it serves.
		pub = append(pub, p+"."+categoryTurns+".>", p+"."+categoryRPC+".>")
		// The dashboard feed counts turns, commits, archives and memories and reads the
		// metrics snapshots; its dead-letter list reads the DLQ with an ordered consumer.
		sub = append(sub, p+"."+categoryMetrics+".>", p+"."+categoryTurns+".>", p+"."+categoryCommits+".>",
			n.EventFilter(contract.EventArchiveCreated), n.EventFilter(contract.EventMemoryUpserted))
		d := n.Stream(StreamDLQ)
		pub = append(pub, api+"CONSUMER.CREATE."+d+".>", api+"CONSUMER.INFO."+d+".*", api+"CONSUMER.DELETE."+d+".*",
			api+"CONSUMER.MSG.NEXT."+d+".*")
		// Its /metrics reports every durable's lag.
		for _, kind := range []string{StreamTurns, StreamCommits, StreamEvents} {
			pub = append(pub, api+"CONSUMER.LIST."+n.Stream(kind))
		}
		// It answers the server's auth callout for API keys (package callout).
		sub = append(sub, calloutSubject)
	}
	perms := Permissions{Publish: pub, Subscribe: sub}
	if len(rpcOps[service]) > 0 || service == ServiceGateway {
		perms.Responses = ResponseWindow
	}
	return perms, nil
}

// calloutSubject is where nats-server sends its auth callout requests (callout.Subject).
const calloutSubject = "$SYS.REQ.USER.AUTH"
