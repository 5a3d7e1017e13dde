package memory

import (
	"context"
	"regexp"
	"strings"
	"time"
)

// Message is what an extractor reads: one archived message.
type Message struct {
	ID        string
	Role      string // user | assistant | tool | system
	Name      string // speaker's display name, when known
	Text      string
	CreatedAt time.Time
}

// Extractor turns a session's archived messages into memory candidates.
type Extractor interface {
	Extract(ctx context.Context, msgs []Message) ([]Candidate, error)
	Name() string
}

// Scopes of a memory: user messages feed the user scope, assistant messages the agent scope.
const (
	ScopeUser  = "user"
	ScopeAgent = "agent"
)

// Heuristic is the default extractor: rules over sentences, no network. From user messages it
// takes profile facts, preferences and habits (with polarity), entities with their relation
// to the speaker, events with absolute dates, decisions, tasks and other first-person facts;
// from assistant messages, cases (a problem and what solved it), patterns (recurring
// procedures) and decisions. Corrections ("actually, it's Rex, not Max") replace the value
// they correct. "I"/"my" resolve to the speaker. It holds its part-of-speech tagger's model,
// loaded by its first extraction; one Heuristic serves concurrent extractions.
type Heuristic struct {
	tagger *tagger
}

// NewHeuristic returns the heuristic extractor. Its tagger's model (about 0.4 s to load and
// 28 MB of heap) loads with the first extraction: build one and share it.
func NewHeuristic() *Heuristic { return &Heuristic{tagger: newTagger()} }

// Name implements Extractor.
func (*Heuristic) Name() string { return "heuristic" }

// Importance of each category (a rough prior; recall may weigh it).
var importance = map[string]float64{
	Profile: 0.9, Preference: 0.7, Entity: 0.7, Event: 0.6, Decision: 0.7, Task: 0.6, Fact: 0.4, Case: 0.7, Pattern: 0.7,
}

// extraction is the state of one Extract call.
type extraction struct {
	out     []Candidate
	learned string // a user who says "my name is X" is X from then on, when the host gave no name
	lastUsr *Message
}

// Extract implements Extractor.
func (h *Heuristic) Extract(_ context.Context, msgs []Message) ([]Candidate, error) {
	x := &extraction{}
	for i := range msgs {
		m := msgs[i]
		if m.Role != "user" && m.Role != "assistant" {
			continue
		}
		m.Text = strings.ReplaceAll(m.Text, "’", "'")
		speaker := x.speaker(m)
		var said []scored
		last := -1 // in said, the statement of the sentence before, -1 when it gave none
		for _, s := range Sentences(m.Text) {
			before := last
			last = -1
			if len(strings.Fields(s)) < 3 || strings.HasSuffix(s, "?") {
				continue
			}
			if m.Role == "assistant" {
				x.add(agentRules(s, speaker, m, x.lastUsr)...)
				continue
			}
			if fixed, ok := x.correct(s, speaker, m); ok {
				said = dropCorrected(said, fixed)
				last = -1
				continue
			}
			got, goesOn := h.tagger.userPropositions(s, speaker, m)
			if goesOn != "" && before >= 0 {
				said[before].c = goOn(said[before].c, goesOn)
				continue
			}
			for i, c := range got {
				if !c.aside {
					last = len(said) + i
				}
			}
			said = append(said, got...)
		}
		x.add(mostFactual(said, maxPerMessage)...)
		if m.Role == "user" {
			x.lastUsr = &msgs[i]
		}
	}
	return x.out, nil
}

// dropCorrected drops from a message's statements those that fill a slot a later sentence of
// the same message corrected ("I live in Boston. Actually, I moved to Denver."): they would
// otherwise be stored after the correction and win.
func dropCorrected(said []scored, fixed []Candidate) []scored {
	kept := said[:0]
	for _, sc := range said {
		stale := false
		for _, f := range fixed {
			stale = stale || sameSlot(sc.c, f)
		}
		if !stale {
			kept = append(kept, sc)
		}
	}
	return kept
}

// goOn keeps with a statement the sentence after it that says what the thing it spoke of is
// or did: "Priya started learning the cello in March" and "It's hard on the fingers but so
// relaxing after work" are one memory, "Priya started learning the cello in March; it is hard
// on the fingers but relaxing after work." — one fact about one subject, the "it" read with
// what it refers to rather than stored as a memory that cannot say what "it" is.
func goOn(c Candidate, goesOn string) Candidate {
	c.Text = strings.TrimRight(c.Text, " .!;,:") + "; " + goesOn
	c.Abstract = Abstract(c.Text)
	return c
}

func (x *extraction) speaker(m Message) string {
	if m.Name != "" {
		return m.Name
	}
	if m.Role == "user" {
		if g := reName.FindStringSubmatch(m.Text); g != nil {
			x.learned = g[1]
		}
		if x.learned != "" {
			return x.learned
		}
		return "User"
	}
	return "Assistant"
}

// add appends candidates; one restating a fact already extracted in this call only adds its
// source to the first.
func (x *extraction) add(cs ...Candidate) {
	for _, c := range cs {
		dup := false
		for i := range x.out {
			o := &x.out[i]
			if o.Category == c.Category && o.Scope == c.Scope && Normalize(o.Subject) == Normalize(c.Subject) &&
				Normalize(o.Attribute) == Normalize(c.Attribute) && o.Polarity == c.Polarity && Normalize(o.Value) == Normalize(c.Value) {
				for _, s := range c.Sources {
					if !containsString(o.Sources, s) {
						o.Sources = append(o.Sources, s)
					}
				}
				dup = true
				break
			}
		}
		if !dup {
			x.out = append(x.out, c)
		}
	}
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// newCandidate builds a candidate from a sentence: the text is the sentence with the speaker
// resolved, the event time whatever the sentence dates.
func newCandidate(scope, cat, subject, attr string, pol int, value, sentence, speaker string, m Message) Candidate {
	text := ResolveSpeaker(sentence, speaker)
	c := Candidate{
		Scope: scope, Category: cat, Subject: subject, Attribute: attr, Polarity: pol,
		Value: value, Abstract: Abstract(text), Text: text, Importance: importance[cat], Sources: []string{m.ID},
		Extractor: "heuristic",
	}
	if when, ok := ResolveTime(sentence, m.CreatedAt); ok {
		c.EventTime = &when
	}
	return c
}

var reAbbrev = regexp.MustCompile(`(?i)(?:^|\s)(?:dr|mr|mrs|ms|st|vs|etc|e\.g|i\.e|approx|no|jr|sr)$`)

// reInitials is the end of a run of initials before its last full stop: "J.K", "U.S", "D.C".
var reInitials = regexp.MustCompile(`(?:^|[\s(])(?:[A-Z]\.)+[A-Z]$`)

// afterClosers is the index of the last closing quote or bracket right after line[j]: a
// sentence ends after what closes it ("… called \"Finding Home.\" It's …").
func afterClosers(line string, j int) int {
	for {
		rest := line[j+1:]
		switch {
		case strings.HasPrefix(rest, "\"") || strings.HasPrefix(rest, ")") || strings.HasPrefix(rest, "'"):
			j++
		case strings.HasPrefix(rest, "\u201d") || strings.HasPrefix(rest, "\u2019"):
			j += len("\u201d") // both three bytes
		default:
			return j
		}
	}
}

// Sentences splits text at sentence ends (., ! or ? and the quotes or brackets they close,
// followed by a space or the end; not after a common abbreviation or initials) and at line
// breaks; "Node.js", "3.5" and "J.K. Rowling" stay whole.
func Sentences(text string) []string {
	var out []string
	emit := func(s string) {
		s = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(s), "-*•>#"))
		if s != "" {
			out = append(out, s)
		}
	}
	for _, line := range strings.Split(text, "\n") {
		start := 0
		for i := 0; i < len(line); i++ {
			c := line[i]
			if c != '.' && c != '!' && c != '?' {
				continue
			}
			j := i
			for j+1 < len(line) && (line[j+1] == '.' || line[j+1] == '!' || line[j+1] == '?') {
				j++
			}
			stop := j
			j = afterClosers(line, j)
			if j+1 < len(line) && line[j+1] != ' ' && line[j+1] != '\t' {
				i = j
				continue
			}
			if c == '.' && stop == i && (reAbbrev.MatchString(line[start:i]) || reInitials.MatchString(line[start:i])) {
				continue
			}
			emit(line[start : j+1])
			start = j + 1
			i = j
		}
		emit(line[start:])
	}
	return out
}

// trimObject cuts an object phrase at the first clause boundary and drops trailing filler.
func trimObject(s string) string {
	s = strings.TrimSpace(s)
	s = strings.TrimRight(s, ".!?,;: ")
	low := strings.ToLower(s)
	for _, cut := range []string{" because ", " but ", " since ", " and i ", " so ", ", and ", ", which ", ", not ", " anymore", " any more", " these days", " nowadays"} {
		if i := strings.Index(low, cut); i > 0 {
			s, low = s[:i], low[:i]
		}
	}
	for _, tail := range []string{" a lot", " very much", " so much", " too", " as well", " though"} {
		if strings.HasSuffix(low, tail) {
			s, low = s[:len(s)-len(tail)], low[:len(low)-len(tail)]
		}
	}
	return strings.TrimRight(strings.TrimSpace(s), ".!?,;: ")
}
