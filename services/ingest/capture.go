package ingest

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/tokens"
)

// injectedBlocks are blocks a host or membus itself put into a prompt; they are stripped so
// recalled text is never captured again.
var injectedBlocks = []*regexp.Regexp{
	regexp.MustCompile(`(?s)<relevant-memories>.*?</relevant-memories>`),
	regexp.MustCompile(`(?s)<membus-context>.*?</membus-context>`),
	regexp.MustCompile(`(?s)\[Session History Summary\].*?\[/Session History Summary\]`),
}

// secretPatterns redact credentials before anything is stored (docs/design.md §6 "Capture"); each
// match is replaced whole. hint is a lower-case literal every match contains: the regexp runs
// only when the text contains it (most messages hold no secret, and the regexps are costly).
var secretPatterns = []struct {
	hint string
	re   *regexp.Regexp
}{
	{"-----begin", regexp.MustCompile(`(?s)-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----`)},
	{"sk-", regexp.MustCompile(`\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}\b`)},
	{"akia", regexp.MustCompile(`\bAKIA[0-9A-Z]{16}\b`)},
	{"asia", regexp.MustCompile(`\bASIA[0-9A-Z]{16}\b`)},
	{"gh", regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{30,}\b`)},
	{"xox", regexp.MustCompile(`\bxox[baprs]-[A-Za-z0-9-]{10,}\b`)},
	{"eyj", regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\b`)},
}

// keyedHints are lower-case literals one of which every keyedSecret match contains.
var keyedHints = []string{"passw", "pwd", "secret", "key", "token"}

// bearerSecret is an HTTP bearer credential; the scheme word is kept.
var bearerSecret = regexp.MustCompile(`(?i)\b(bearer\s+)[A-Za-z0-9._~+/-]{16,}=*`)

// keyedSecret is a value after a credential-like key, in the forms of env files, configs,
// command lines and JSON: password=…, DB_PASSWORD=…, api_key: …, "password":"…",
// aws_secret_access_key = …. The key is kept; a quoted value stays quoted.
var keyedSecret = regexp.MustCompile(`(?i)\b([a-z0-9_-]*?(?:password|passwd|pwd|secret|api[_-]?key|access[_-]?key|token)["']?\s*[:=]\s*)("[^"\n]*"|'[^'\n]*'|[^\s"',;}]+)`)

// Capturer renders messages for storage with the built-in secret patterns plus the
// operator's (MEMBUS_REDACT_PATTERNS).
type Capturer struct {
	extra []*regexp.Regexp
}

// NewCapturer compiles the extra redaction patterns; an invalid one is an error naming it.
func NewCapturer(extra []string) (*Capturer, error) {
	c := &Capturer{}
	for _, p := range extra {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("redact_patterns: %q: %w", p, err)
		}
		c.extra = append(c.extra, re)
	}
	return c, nil
}

// Capture renders a message with the built-in patterns only (see Capturer.Capture).
func Capture(m contract.Message) (store.Message, bool) {
	sm, _, ok := (&Capturer{}).Capture(m)
	return sm, ok
}

// Capture renders a message into what is stored: its capture text with injected blocks
// stripped and secrets redacted, its parts (redacted too) and its token count, and says how
// many secrets it redacted. A message with nothing left to store is dropped (ok false).
func (c *Capturer) Capture(m contract.Message) (store.Message, int, bool) {
	redactions := 0
	red := func(s string) string {
		out, n := c.redact(s)
		redactions += n
		return out
	}
	parts := make([]contract.Part, 0, len(m.Parts))
	for _, p := range m.Parts {
		p.Text = red(stripInjected(p.Text))
		p.Caption = red(p.Caption)
		p.Arguments = red(p.Arguments)
		p.Output = red(p.Output)
		if p.Type == contract.PartText && strings.TrimSpace(p.Text) == "" {
			continue
		}
		parts = append(parts, p)
	}
	cm := m
	cm.Parts = parts
	text := strings.TrimSpace(cm.Text())
	if text == "" {
		return store.Message{}, redactions, false
	}
	pj, _ := json.Marshal(parts)
	return store.Message{
		MessageID: m.MessageID, Position: m.Position, Role: m.Role, Name: m.Name,
		Content: text, Parts: pj, Tokens: tokens.Count(text), CreatedAt: m.CreatedAt.UTC(),
	}, redactions, true
}

// injectedOpeners are the literals injectedBlocks' matches begin with, in their order: a text
// without one cannot hold the block, and stripInjected skips its regexp (which would copy the
// text twice to replace nothing).
var injectedOpeners = []string{"<relevant-memories>", "<membus-context>", "[Session History Summary]"}

func stripInjected(s string) string {
	for i, re := range injectedBlocks {
		if strings.Contains(s, injectedOpeners[i]) {
			s = re.ReplaceAllString(s, "")
		}
	}
	return s
}

// redact replaces every secret in s and counts the replacements.
func (c *Capturer) redact(s string) (string, int) {
	if s == "" {
		return s, 0
	}
	n := 0
	replace := func(re *regexp.Regexp, s, with string) string {
		if k := len(re.FindAllStringIndex(s, -1)); k > 0 {
			n += k
			return re.ReplaceAllString(s, with)
		}
		return s
	}
	found := hintsIn(s)
	for i, p := range secretPatterns {
		if found&(1<<i) != 0 {
			s = replace(p.re, s, "[REDACTED]")
		}
	}
	for _, re := range c.extra {
		s = replace(re, s, "[REDACTED]")
	}
	if found&hintBearer != 0 {
		s = replace(bearerSecret, s, "${1}[REDACTED]")
	}
	if found&hintKeyed == 0 {
		return s, n
	}
	s = keyedSecret.ReplaceAllStringFunc(s, func(match string) string {
		sub := keyedSecret.FindStringSubmatch(match)
		key, value := sub[1], sub[2]
		if value == "[REDACTED]" || value == `"[REDACTED]"` || value == "'[REDACTED]'" {
			return match
		}
		n++
		if q := value[0]; (q == '"' || q == '\'') && len(value) > 1 {
			return key + string(q) + "[REDACTED]" + string(q)
		}
		return key + "[REDACTED]"
	})
	return s, n
}

// Bits of hintsIn's result besides secretPatterns' (bit i: secretPatterns[i].hint).
const (
	hintBearer = 1 << (iota + 7) // "bearer"
	hintKeyed                    // one of keyedHints
)

// hintsIn says which hints s contains, ignoring case as strings.ToLower does: bit i for
// secretPatterns[i], hintBearer, hintKeyed. An ASCII text is scanned once, without a lower-case
// copy (hintsASCII); any other goes through strings.ToLower (hintsLower), whose Unicode case
// mapping can turn a non-ASCII letter into an ASCII one (the Kelvin sign K into k).
func hintsIn(s string) uint16 {
	if found, ok := hintsASCII(s); ok {
		return found
	}
	return hintsLower(strings.ToLower(s))
}

// hintsLower is hintsIn of a lower-cased text.
func hintsLower(lower string) uint16 {
	var found uint16
	for i, p := range secretPatterns {
		if strings.Contains(lower, p.hint) {
			found |= 1 << i
		}
	}
	if strings.Contains(lower, "bearer") {
		found |= hintBearer
	}
	for _, h := range keyedHints {
		if strings.Contains(lower, h) {
			found |= hintKeyed
			break
		}
	}
	return found
}

// hintStarts lists, for each lower-case ASCII letter or '-' a hint begins with, the hints
// beginning with it and their bits.
var hintStarts = func() (t [256][]struct {
	hint string
	bit  uint16
}) {
	add := func(h string, bit uint16) {
		t[h[0]] = append(t[h[0]], struct {
			hint string
			bit  uint16
		}{h, bit})
	}
	for i, p := range secretPatterns {
		add(p.hint, 1<<i)
	}
	add("bearer", hintBearer)
	for _, h := range keyedHints {
		add(h, hintKeyed)
	}
	return t
}()

// hintsASCII is hintsIn of an ASCII text (ok false: s is not ASCII): one pass, each byte
// lower-cased and the hints beginning with it compared at that offset.
func hintsASCII(s string) (found uint16, ok bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			return 0, false
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		for _, h := range hintStarts[c] {
			if found&h.bit == 0 && hasPrefixLowerASCII(s[i:], h.hint) {
				found |= h.bit
			}
		}
	}
	return found, true
}

// hasPrefixLowerASCII reports whether s begins with prefix (lower-case ASCII) once s's ASCII
// upper-case letters are lowered.
func hasPrefixLowerASCII(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for j := 0; j < len(prefix); j++ {
		c := s[j]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[j] {
			return false
		}
	}
	return true
}

// afterPrePrompt keeps the messages after the host's pre-prompt count (positions are indices
// within the host's transcript snapshot).
func afterPrePrompt(msgs []contract.Message, n int) []contract.Message {
	var out []contract.Message
	for _, m := range msgs {
		if m.Position >= n {
			out = append(out, m)
		}
	}
	return out
}

func bypassed(session string, patterns []string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, session); ok {
			return true
		}
	}
	return false
}
