package bus

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Scope is what a tenant's bus credential may do (docs/design.md §3, "Tenancy on the bus").
type Scope int

const (
	// ScopeAccount is an admin API key: publish the account's turns, call every RPC of the
	// account (for any of its users, named in the payload).
	ScopeAccount Scope = iota + 1
	// ScopeUser is a user API key: call the data RPCs of the account on UserRPC subjects only,
	// which act for the key's user whatever the payload says; no turns, no admin RPCs.
	ScopeUser
	// ScopeOps is an operator API key: the stats RPC of every account and the metrics feed.
	ScopeOps
)

// Grant is what a credential was issued for.
type Grant struct {
	Scope   Scope
	Account string
	User    string // ScopeUser only
	KeyID   string // names the credential's reply inboxes: InboxPrefix(KeyID)
}

// Permissions are the subjects a credential may publish to and subscribe to (allow lists:
// everything else is denied).
type Permissions struct {
	Publish   []string
	Subscribe []string
	// Responses > 0 lets the credential answer each request it receives, once, within that
	// long (nats-server's allow_responses): the RPC servers' replies go to the callers' inboxes,
	// which no allow list could name.
	Responses time.Duration
}

// UserOps are the RPCs a user key may call, each on a UserRPC subject.
var UserOps = []string{
	"recall", "context", "session.get",
	"memories.list", "memories.get", "memories.forget",
	"archive.search", "archive.expand",
	"commit", "summary",
}

// categoryUserRPC is the subject category of user-bound RPCs.
const categoryUserRPC = "urpc"

// ErrBadGrant is returned (wrapped) by Names.Permissions for a grant it cannot express.
var ErrBadGrant = errors.New("bad bus grant")

// maxUserIDLen is the longest user id a UserRPC subject carries (the schemas' user_id).
const maxUserIDLen = 256

// InboxPrefix is the reply-inbox prefix of a tenant credential: a client connecting with the
// key must use it (nats.CustomInboxPrefix, nats.js inboxPrefix), and may subscribe nowhere
// else, so no credential receives the replies of another.
func InboxPrefix(keyID string) string { return "_INBOX." + keyID }

// UserToken turns a user id into one subject token (base64url, no padding): reversible, so
// the RPC server can read the user back from the subject.
func UserToken(user string) string { return base64.RawURLEncoding.EncodeToString([]byte(user)) }

// ParseUserToken reverses UserToken.
func ParseUserToken(tok string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(b) == 0 || len(b) > maxUserIDLen || !utf8.Valid(b) {
		return "", fmt.Errorf("%w: user token %q is not a base64url user id of 1–%d bytes", ErrBadSubject, tok, maxUserIDLen)
	}
	return string(b), nil
}

// UserRPC is the subject of an RPC made for one user: <p>.urpc.<account>.<user token>.<op>.
// The RPC server answers it as n.RPC(account, op) with the payload's user_id replaced by user.
func (n Names) UserRPC(account, user, op string) string {
	return n.p() + "." + categoryUserRPC + "." + account + "." + UserToken(user) + "." + op
}

// userRPCFilter is the subscription of op's UserRPC subjects: <p>.urpc.*.*.<op>.
func (n Names) userRPCFilter(op string) string {
	return n.p() + "." + categoryUserRPC + ".*.*." + op
}

// Permissions returns what a credential with grant g may publish and subscribe to.
func (n Names) Permissions(g Grant) (Permissions, error) {
	if g.KeyID == "" || strings.ContainsAny(g.KeyID, ".*> \t\r\n") {
		return Permissions{}, fmt.Errorf("%w: key id %q is not one subject token", ErrBadGrant, g.KeyID)
	}
	inbox := InboxPrefix(g.KeyID) + ".>"
	if g.Scope == ScopeOps {
		return Permissions{
			Publish:   []string{n.RPC("*", "stats")},
			Subscribe: []string{inbox, n.p() + "." + categoryMetrics + ".>"},
		}, nil
	}
	if err := ValidAccount(g.Account); err != nil {
		return Permissions{}, fmt.Errorf("%w: %w", ErrBadGrant, err)
	}
	switch g.Scope {
	case ScopeAccount:
		return Permissions{
			Publish:   []string{n.p() + "." + categoryTurns + "." + g.Account + ".>", n.RPC(g.Account, ">")},
			Subscribe: []string{inbox},
		}, nil
	case ScopeUser:
		if g.User == "" || len(g.User) > maxUserIDLen || !utf8.ValidString(g.User) {
			return Permissions{}, fmt.Errorf("%w: user %q must be 1–%d bytes of UTF-8", ErrBadGrant, g.User, maxUserIDLen)
		}
		pub := make([]string, 0, len(UserOps))
		for _, op := range UserOps {
			pub = append(pub, n.UserRPC(g.Account, g.User, op))
		}
		return Permissions{Publish: pub, Subscribe: []string{inbox}}, nil
	default:
		return Permissions{}, fmt.Errorf("%w: unknown scope %d", ErrBadGrant, g.Scope)
	}
}
