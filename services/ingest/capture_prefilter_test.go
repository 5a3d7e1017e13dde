package ingest

import (
	"strings"
	"testing"
)

// prefilterCases are texts around the prefilters' edges: hints in any case, at the ends of the
// text, cut short, next to non-ASCII letters, and Unicode letters whose lower case is ASCII.
var prefilterCases = []string{
	"", "k", "ke", "key", "KEY", "kEy=1", "a key", "monkeys", "tok", "TOKEN", "x token",
	"sk", "sk-", "SK-abc", "ask-me", "akia", "AKIAIOSFODNN7EXAMPLE", "asia", "gh", "GH", "xox", "XOXB-1", "eyj", "EYJ",
	"bearer", "BeArEr abc", "beare", "passw", "PASSWORD=1", "pwd", "Pwd", "secret", "SECRET_KEY", "-----begin", "-----BEGIN RSA",
	"----begin", "-----begi",
	"\u212aey=1", // Kelvin sign: strings.ToLower gives "key=1"
	"\u212a",     // alone
	"to\u212aen", // "token" only once lowered
	"İsecret",    // İ lowers to two runes
	"ésecret", "sécret", "pässword", "日本語 key", "key 日本語", "\xff key", "bad \xc3", "ﬀ secret",
	"The quick brown fox jumps over the lazy dog while we plan the trip to Lisbon in May.",
	"<relevant-memories>x</relevant-memories> after", "<RELEVANT-MEMORIES>x</RELEVANT-MEMORIES>",
	"<membus-context>a\nb</membus-context>", "<membus-context>unclosed", "[Session History Summary]s[/Session History Summary]",
	"[session history summary]s[/session history summary]", "a <relevant-memories> b <membus-context> c [Session History Summary] d",
}

// stripInjectedReference is stripInjected without its prefilter: every regexp run.
func stripInjectedReference(s string) string {
	for _, re := range injectedBlocks {
		s = re.ReplaceAllString(s, "")
	}
	return s
}

func checkPrefilters(t *testing.T, s string) {
	t.Helper()
	if got, want := hintsIn(s), hintsLower(strings.ToLower(s)); got != want {
		t.Errorf("hintsIn(%q) = %b, strings.ToLower's hints %b", s, got, want)
	}
	if got, want := stripInjected(s), stripInjectedReference(s); got != want {
		t.Errorf("stripInjected(%q) = %q, every regexp run: %q", s, got, want)
	}
}

// TestPrefiltersAreExact: the hint scan gives the hints of the lower-cased text, and the
// injected-block prefilter the text every regexp gives, on texts at their edges.
func TestPrefiltersAreExact(t *testing.T) {
	for _, s := range prefilterCases {
		checkPrefilters(t, s)
		checkPrefilters(t, s+" "+strings.ToUpper(s))
	}
	for _, p := range secretPatterns {
		checkPrefilters(t, p.hint)
		checkPrefilters(t, strings.ToUpper(p.hint))
	}
}

// FuzzPrefilters compares the prefilters with what they stand in for on arbitrary texts.
func FuzzPrefilters(f *testing.F) {
	for _, s := range prefilterCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkPrefilters(t, s) })
}
