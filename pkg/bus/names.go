package bus

import (
	"errors"
	"fmt"
	"strings"
)

// Stream kinds. Names.Stream turns a kind into the deployment's stream name.
const (
	StreamTurns   = "TURNS"
	StreamCommits = "COMMITS"
	StreamEvents  = "EVENTS"
	StreamDLQ     = "DLQ"
)

// DefaultPrefix is the subject prefix used when none is configured.
const DefaultPrefix = "membus"

// Subject categories (the token after the prefix).
const (
	categoryTurns   = "turns"
	categoryCommits = "commits"
	categoryEvents  = "events"
	categoryDLQ     = "dlq"
	categoryRPC     = "rpc"
	categoryMetrics = "metrics"
)

// ErrInvalidPrefix is returned (wrapped) by NewNames.
var ErrInvalidPrefix = errors.New("invalid subject prefix")

// ErrBadSubject is returned (wrapped) by ParseSubject for a subject that is not one of ours.
var ErrBadSubject = errors.New("bad subject")

// Names builds every subject, stream and consumer name of one deployment. Several deployments
// can share one NATS by using different prefixes.
type Names struct{ Prefix string }

// NewNames checks the prefix (one token of [a-z0-9_-], at most 32 characters) and returns the
// names for it; "" means DefaultPrefix.
func NewNames(prefix string) (Names, error) {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if len(prefix) > 32 {
		return Names{}, fmt.Errorf("%w %q: at most 32 characters of [a-z0-9_-]", ErrInvalidPrefix, prefix)
	}
	for i := 0; i < len(prefix); i++ {
		if !isLowerTokenByte(prefix[i]) {
			return Names{}, fmt.Errorf("%w %q: must be one subject token of [a-z0-9_-] (bad character %q)", ErrInvalidPrefix, prefix, prefix[i])
		}
	}
	return Names{Prefix: prefix}, nil
}

func (n Names) p() string {
	if n.Prefix == "" {
		return DefaultPrefix
	}
	return n.Prefix
}

// Stream returns the stream name of a kind: "MEMBUS_TURNS" for prefix membus and StreamTurns.
func (n Names) Stream(kind string) string {
	return strings.ToUpper(strings.ReplaceAll(n.p(), "-", "_")) + "_" + strings.ToUpper(kind)
}

// streamSubjects is the subject filter a stream kind stores: <p>.turns.> for TURNS.
func (n Names) streamSubjects(kind string) string {
	return n.p() + "." + strings.ToLower(kind) + ".>"
}

// Turns is the subject of a session's turn events: <p>.turns.<account>.<session token>.
// The account must pass ValidAccount.
func (n Names) Turns(account, session string) string {
	return n.p() + "." + categoryTurns + "." + account + "." + SessionToken(session)
}

// Commits is the subject of a session's commit requests: <p>.commits.<account>.<session token>.
func (n Names) Commits(account, session string) string {
	return n.p() + "." + categoryCommits + "." + account + "." + SessionToken(session)
}

// Event is the subject of a domain event: <p>.events.<kind>.<account>.<session token>.
func (n Names) Event(kind, account, session string) string {
	return n.p() + "." + categoryEvents + "." + kind + "." + account + "." + SessionToken(session)
}

// EventFilter is the subject filter of every event of one kind: <p>.events.<kind>.>.
func (n Names) EventFilter(kind string) string {
	return n.p() + "." + categoryEvents + "." + kind + ".>"
}

// DLQ is the subject of a dead letter: <p>.dlq.<stream, lower case>.<account>.<token>. The
// token is already a session token (it comes from the original subject).
func (n Names) DLQ(stream, account, sessionToken string) string {
	return n.p() + "." + categoryDLQ + "." + strings.ToLower(stream) + "." + account + "." + sessionToken
}

// RPC is the subject of a request-reply operation: <p>.rpc.<account>.<op>; op may contain
// dots (memories.list). Servers subscribe with account "*".
func (n Names) RPC(account, op string) string {
	return n.p() + "." + categoryRPC + "." + account + "." + op
}

// Metrics is the core-NATS subject of a service instance's metrics snapshots.
func (n Names) Metrics(service, instance string) string {
	return n.p() + "." + categoryMetrics + "." + service + "." + InstanceToken(instance)
}

// Consumer is the durable consumer (and queue group) name of a service: "membus-ingest".
func (n Names) Consumer(service string) string {
	return n.p() + "-" + service
}

// Subject is a parsed turns, commits, events or dlq subject.
type Subject struct {
	Category     string // turns | commits | events | dlq
	EventKind    string // events only: archive_created, …
	DLQStream    string // dlq only: the lower-case stream kind the letter came from
	Account      string
	SessionToken string
}

// Parse splits one of this deployment's turns, commits, events or dlq subjects into its parts,
// checking the account and session token rules.
func (n Names) Parse(subject string) (Subject, error) {
	toks := strings.Split(subject, ".")
	if len(toks) < 2 || toks[0] != n.p() {
		return Subject{}, fmt.Errorf("%w %q: not under prefix %q", ErrBadSubject, subject, n.p())
	}
	var s Subject
	s.Category = toks[1]
	var rest []string
	switch s.Category {
	case categoryTurns, categoryCommits:
		rest = toks[2:]
	case categoryEvents:
		if len(toks) != 5 {
			return Subject{}, fmt.Errorf("%w %q: want %s.events.<kind>.<account>.<session>", ErrBadSubject, subject, n.p())
		}
		s.EventKind = toks[2]
		if !isSafeToken(s.EventKind) {
			return Subject{}, fmt.Errorf("%w %q: bad event kind", ErrBadSubject, subject)
		}
		rest = toks[3:]
	case categoryDLQ:
		if len(toks) != 5 {
			return Subject{}, fmt.Errorf("%w %q: want %s.dlq.<stream>.<account>.<session>", ErrBadSubject, subject, n.p())
		}
		s.DLQStream = toks[2]
		rest = toks[3:]
	default:
		return Subject{}, fmt.Errorf("%w %q: unknown category %q", ErrBadSubject, subject, s.Category)
	}
	if len(rest) != 2 {
		return Subject{}, fmt.Errorf("%w %q: want %s.%s.<account>.<session>", ErrBadSubject, subject, n.p(), s.Category)
	}
	if err := ValidAccount(rest[0]); err != nil {
		return Subject{}, fmt.Errorf("%w %q: %w", ErrBadSubject, subject, err)
	}
	if !isSafeToken(rest[1]) {
		return Subject{}, fmt.Errorf("%w %q: session token must match [A-Za-z0-9_-]{1,64}", ErrBadSubject, subject)
	}
	s.Account, s.SessionToken = rest[0], rest[1]
	return s, nil
}

// ParseSubject returns the category (turns, commits, events, dlq), account and session token
// of a subject; Parse also gives the event kind and dead-letter stream.
func (n Names) ParseSubject(subject string) (kind, account, sessionToken string, err error) {
	s, err := n.Parse(subject)
	if err != nil {
		return "", "", "", err
	}
	return s.Category, s.Account, s.SessionToken, nil
}
