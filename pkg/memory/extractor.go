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

// Heuristic is the default extractor: rules over sentences, no network. It recognises
// profile facts, preferences (with polarity), events with absolute dates, decisions and
// tasks, and keeps other first-person statements as facts. "I"/"my" resolve to the speaker.
type Heuristic struct{}

// NewHeuristic returns the heuristic extractor.
func NewHeuristic() *Heuristic { return &Heuristic{} }

// Name implements Extractor.
func (*Heuristic) Name() string { return "heuristic" }

var (
	sentenceSplit = regexp.MustCompile(`[^.!?\n]+[.!?]*`)
	firstPerson   = regexp.MustCompile(`(?i)\b(i|i'm|i've|i'd|i'll|my|me|mine|we|we're|our|us)\b`)
	rePrefer      = regexp.MustCompile(`(?i)\b(?:i|we)\s+(?:really\s+|also\s+|absolutely\s+)?(don't like|do not like|dislike|hate|can't stand|love|like|enjoy|prefer|adore)\s+(.+)`)
	reNoLonger    = regexp.MustCompile(`(?i)\b(?:i|we)\s+(?:don't|do not|no longer)\s+(?:like|enjoy|love)\s+(.+?)(?:\s+any\s*more|\s+anymore)?[\s.!?]*$`)
	reName        = regexp.MustCompile(`(?i:\bmy name is)\s+([A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)?)`)
	reLive        = regexp.MustCompile(`(?i:\bi\s+(?:live|moved|am moving|'m moving|relocated)\s+(?:in|to))\s+([A-Z][\w'-]*(?:(?:\s+|,\s*)[A-Z][\w'-]*)*)`)
	reWork        = regexp.MustCompile(`(?i)\bi\s+(?:work|am working|'m working)\s+(?:as|at|for)\s+(.+)`)
	reIAm         = regexp.MustCompile(`(?i)\bi(?:\s+am|'m)\s+(?:a|an)\s+(.+)`)
	reMyIs        = regexp.MustCompile(`(?i)\bmy\s+([a-z][a-z' ]{1,40}?)\s+(?:is|are|was)\s+(?:named\s+|called\s+)?(.+)`)
	reNamed       = regexp.MustCompile(`(?i:\b(?:i have|i've got|i got|we have)\s+(?:a|an)\s+([a-z]+)\s+(?:named|called))\s+([A-Z][\w'-]*)`)
	reDecision    = regexp.MustCompile(`(?i)\b(?:we|i)\s+(?:decided|agreed|chose|settled on|will go with)\b|\blet's go with\b`)
	reTask        = regexp.MustCompile(`(?i)\b(?:remind me to|i need to|i have to|i must|todo:|to-do:|don't forget to)\b`)
)

// Extract implements Extractor.
func (h *Heuristic) Extract(_ context.Context, msgs []Message) ([]Candidate, error) {
	var out []Candidate
	learned := "" // a user who says "my name is X" is X from then on, when the host gave no name
	for _, m := range msgs {
		if m.Role != "user" && m.Role != "assistant" {
			continue
		}
		speaker := m.Name
		if speaker == "" && m.Role == "user" {
			if g := reName.FindStringSubmatch(m.Text); g != nil {
				learned = g[1]
			}
			speaker = learned
		}
		if speaker == "" {
			if m.Role == "user" {
				speaker = "User"
			} else {
				speaker = "Assistant"
			}
		}
		scope := "user"
		if m.Role == "assistant" {
			scope = "agent"
		}
		for _, raw := range sentenceSplit.FindAllString(m.Text, -1) {
			s := strings.TrimSpace(raw)
			if len(strings.Fields(s)) < 3 {
				continue
			}
			if m.Role == "assistant" {
				// Assistant side: keep only decisions and commitments (agent scope).
				if reDecision.MatchString(s) {
					out = append(out, h.candidate(scope, Decision, speaker, "", 1, s, s, 0.6, m))
				}
				continue
			}
			if c, ok := h.classify(s, speaker, m); ok {
				out = append(out, c)
			}
		}
	}
	return out, nil
}

func (h *Heuristic) classify(s, speaker string, m Message) (Candidate, bool) {
	scope := "user"
	switch {
	case reName.MatchString(s):
		v := reName.FindStringSubmatch(s)[1]
		return h.candidate(scope, Profile, speaker, "name", 1, v, s, 0.9, m), true
	case reLive.MatchString(s):
		v := strings.TrimRight(reLive.FindStringSubmatch(s)[1], " ,")
		return h.candidate(scope, Profile, speaker, "lives in", 1, v, s, 0.8, m), true
	case reWork.MatchString(s):
		v := trimObject(reWork.FindStringSubmatch(s)[1])
		return h.candidate(scope, Profile, speaker, "works", 1, v, s, 0.8, m), true
	case reNamed.MatchString(s):
		g := reNamed.FindStringSubmatch(s)
		return h.candidate(scope, Entity, speaker, strings.ToLower(g[1])+" name", 1, g[2], s, 0.8, m), true
	case reNoLonger.MatchString(s):
		obj := trimObject(reNoLonger.FindStringSubmatch(s)[1])
		return h.candidate(scope, Preference, speaker, "likes "+Normalize(obj), -1, obj, s, 0.7, m), true
	case rePrefer.MatchString(s):
		g := rePrefer.FindStringSubmatch(s)
		verb, obj := strings.ToLower(g[1]), trimObject(g[2])
		pol := 1
		switch verb {
		case "don't like", "do not like", "dislike", "hate", "can't stand":
			pol = -1
		}
		return h.candidate(scope, Preference, speaker, "likes "+Normalize(obj), pol, obj, s, 0.7, m), true
	case reMyIs.MatchString(s):
		g := reMyIs.FindStringSubmatch(s)
		attr := strings.ToLower(strings.TrimSpace(g[1]))
		return h.candidate(scope, Entity, speaker, attr, 1, trimObject(g[2]), s, 0.6, m), true
	case reDecision.MatchString(s):
		return h.candidate(scope, Decision, speaker, "", 1, s, s, 0.6, m), true
	case reTask.MatchString(s):
		return h.candidate(scope, Task, speaker, "", 1, s, s, 0.6, m), true
	}
	if when, ok := ResolveTime(s, m.CreatedAt); ok && firstPerson.MatchString(s) {
		c := h.candidate(scope, Event, speaker, "", 1, s, s, 0.6, m)
		c.EventTime = &when
		return c, true
	}
	if firstPerson.MatchString(s) && len(strings.Fields(s)) >= 5 {
		return h.candidate(scope, Fact, speaker, "", 1, s, s, 0.4, m), true
	}
	return Candidate{}, false
}

func (h *Heuristic) candidate(scope, cat, speaker, attr string, pol int, value, sentence string, imp float64, m Message) Candidate {
	text := ResolveSpeaker(sentence, speaker)
	return Candidate{
		Scope: scope, Category: cat, Subject: speaker, Attribute: attr, Polarity: pol,
		Value: value, Abstract: Abstract(text), Text: text, Importance: imp, Sources: []string{m.ID},
	}
}

func trimObject(s string) string {
	s = strings.TrimSpace(s)
	s = strings.TrimRight(s, ".!?,; ")
	for _, cut := range []string{" because ", " but ", " since ", " and i ", " so "} {
		if i := strings.Index(strings.ToLower(s), cut); i > 0 {
			s = s[:i]
		}
	}
	return s
}

var (
	reI    = regexp.MustCompile(`\bI\b`)
	reIm   = regexp.MustCompile(`(?i)\bI'm\b`)
	reIve  = regexp.MustCompile(`(?i)\bI've\b`)
	reMy   = regexp.MustCompile(`(?i)\bmy\b`)
	reMe   = regexp.MustCompile(`(?i)\bme\b`)
	reMine = regexp.MustCompile(`(?i)\bmine\b`)
)

// ResolveSpeaker rewrites first-person singular references to the speaker's name.
func ResolveSpeaker(s, speaker string) string {
	s = reIm.ReplaceAllString(s, speaker+" is")
	s = reIve.ReplaceAllString(s, speaker+" has")
	s = reI.ReplaceAllString(s, speaker)
	s = reMy.ReplaceAllString(s, speaker+"'s")
	s = reMine.ReplaceAllString(s, speaker+"'s")
	s = reMe.ReplaceAllString(s, speaker)
	return s
}
