// Package memory holds what membus knows about long-term memories independent of storage:
// categories, deterministic ids, normalisation, and the extractors that turn archived
// messages into memory candidates.
package memory

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"
)

// Categories (docs/design.md §6).
const (
	Profile    = "profile"
	Preference = "preference"
	Entity     = "entity"
	Event      = "event"
	Fact       = "fact"
	Decision   = "decision"
	Task       = "task"
	Case       = "case"
	Pattern    = "pattern"
	Digest     = "digest"
)

// Categories lists every category.
var Categories = []string{Profile, Preference, Entity, Event, Fact, Decision, Task, Case, Pattern, Digest}

// namespace of membus's UUIDv5 ids.
var namespace = uuid.MustParse("6f1d7a8e-3c2b-5e4f-9a10-6d656d627573")

// Candidate is a memory an extractor proposes.
type Candidate struct {
	Scope      string // user | agent
	Category   string
	Subject    string
	Attribute  string
	Polarity   int // 1 or -1
	Value      string
	Abstract   string
	Text       string
	Importance float64
	Sources    []string // message ids
	EventTime  *time.Time
	Extractor  string // which extractor produced it: "heuristic", "llm" (not part of the id)
}

// ID is the deterministic memory id (docs/design.md §5): UUIDv5 over account, user, scope, agent when
// agent-scoped, category, subject, attribute, polarity and the normalised value — plus the
// event day for events, so recurring events stay distinct.
func ID(account, user, agent string, c Candidate) string {
	parts := []string{account, user, c.Scope}
	if c.Scope == "agent" {
		parts = append(parts, agent)
	}
	pol := "+"
	if c.Polarity < 0 {
		pol = "-"
	}
	parts = append(parts, c.Category, Normalize(c.Subject), Normalize(c.Attribute), pol, Normalize(c.Value))
	if c.Category == Event && c.EventTime != nil {
		parts = append(parts, c.EventTime.UTC().Format("2006-01-02"))
	}
	return uuid.NewSHA1(namespace, []byte(strings.Join(parts, "\x1f"))).String()
}

// ImportID is the id of a memory imported from another owner's export (`membus import` into
// another account or user): UUIDv5 over the new owner and the exported id. Ids are global keys
// derived per owner, so the exported id cannot be reused there; a derived one keeps importing
// the same file twice idempotent.
func ImportID(account, user, exportedID string) string {
	return uuid.NewSHA1(namespace, []byte(strings.Join([]string{"import", account, user, exportedID}, "\x1f"))).String()
}

// DigestID is the id of a period digest: (account, user, agent, period, bucket).
func DigestID(account, user, agent, period, bucket string) string {
	return uuid.NewSHA1(namespace, []byte(strings.Join([]string{"digest", account, user, agent, period, bucket}, "\x1f"))).String()
}

// ArchiveID is the deterministic id of an archive: (account, session, range).
func ArchiveID(account, session string, from, to int64) string {
	return uuid.NewSHA1(namespace, []byte(strings.Join([]string{"archive", account, session, itoa(from), itoa(to)}, "\x1f"))).String()
}

// ArchiveMessageID is the deterministic index id of one archived message (recall's `archive`
// target): (account, session, message id).
func ArchiveMessageID(account, session, messageID string) string {
	return uuid.NewSHA1(namespace, []byte(strings.Join([]string{"archive-message", account, session, messageID}, "\x1f"))).String()
}

// ArchiveMessageText is the indexed text of an archived message, "Name: content" so the
// speaker is searchable (the role when the message has no name).
func ArchiveMessageText(role, name, content string) string {
	return Speaker(role, name) + ": " + content
}

// Speaker is who said a message: its name, else its role.
func Speaker(role, name string) string {
	if name == "" {
		return role
	}
	return name
}

// ContextID is the index id of the session-context point of one speaker in one archive
// (projection.ContextPoints).
func ContextID(account, session, archive, speaker string) string {
	return uuid.NewSHA1(namespace, []byte(strings.Join([]string{"context", account, session, archive, speaker}, "\x1f"))).String()
}

// ContentHash is the hash of the normalised text (exact-duplicate detection).
func ContentHash(text string) string {
	h := sha256.Sum256([]byte(Normalize(text)))
	return hex.EncodeToString(h[:])
}

// Normalize lower-cases, keeps letters and digits, and collapses everything else to single spaces.
func Normalize(s string) string {
	var b strings.Builder
	space := false
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = false
			b.WriteRune(r)
		} else {
			space = true
		}
	}
	return b.String()
}

func itoa(n int64) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var buf [20]byte
	i := len(buf)
	for n > 0 {
		i--
		buf[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		buf[i] = '-'
	}
	return string(buf[i:])
}

// Abstract cuts text to at most 256 characters at a word boundary.
func Abstract(text string) string {
	const max = 256
	text = strings.Join(strings.Fields(text), " ")
	r := []rune(text)
	if len(r) <= max {
		return text
	}
	cut := string(r[:max-1])
	if i := strings.LastIndexByte(cut, ' '); i > max/2 {
		cut = cut[:i]
	}
	return cut + "…"
}
