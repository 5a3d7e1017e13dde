package memory

import (
	"regexp"
	"strings"
)

// Patterns over assistant sentences (agent scope).
var (
	reCase = []*regexp.Regexp{
		regexp.MustCompile(`(?i)^(?:so,?\s+|ok,?\s+|okay,?\s+|great,?\s+|good news,?\s+)?(?:the\s+)?(?:fix|solution|workaround|answer|root cause|cause|culprit|problem|issue|bug|error)\s+(?:here\s+)?(?:was|is|turned out to be)\b`),
		regexp.MustCompile(`(?i)\b(?:fixed|solved|resolved|worked around)\s+(?:it|this|that|the\s+\w+(?:\s+\w+)?)\s+by\b`),
		regexp.MustCompile(`(?i)^to\s+(?:fix|solve|resolve|work around|get rid of|avoid)\b`),
		regexp.MustCompile(`(?i)^to\s+[a-z]+\b[^,]{3,80},\s*(?:just\s+|simply\s+)?(?:run|use|set|add|install|call|open|type|execute|edit|change|pass|enable|disable|create|delete|restart|upgrade|downgrade|clear|remove)\b`),
		regexp.MustCompile(`(?i)\b(?:this|that|it)\s+(?:happens|happened|fails|failed|occurs|occurred|breaks|broke)\s+because\b`),
		regexp.MustCompile(`(?i)^(?:you can|you could|you should)\s+(?:fix|solve|resolve|avoid|work around)\b`),
		regexp.MustCompile(`(?i)\bthat\s+(?:fixed|solved|resolved)\s+(?:it|the)\b`),
	}
	rePattern = []*regexp.Regexp{
		regexp.MustCompile(`(?i)^(?:whenever|every time|each time|any time)\b.+,`),
		regexp.MustCompile(`(?i)^(?:always|never|make sure to|remember to)\s+\w+\s+\w+\s+\w+`),
		regexp.MustCompile(`(?i)\b(?:the\s+)?(?:usual|standard|recommended|typical|general|best)\s+(?:way|approach|procedure|workflow|process|practice|pattern)\s+(?:to|for|is)\b`),
		regexp.MustCompile(`(?i)^(?:as a (?:general )?rule|as a rule of thumb|in general|generally)\b,?\s+\w+`),
	}
	reProblem = regexp.MustCompile(`(?i)\b(?:error|fail|fails|failed|failing|broken|crash|crashes|bug|issue|problem|doesn't work|does not work|won't|can't|cannot|stuck|exception|timeout|wrong|how (?:do|can|should) i)\b`)
)

// agentRules extracts the agent-scope memories of one assistant sentence: a case (what
// solved the user's problem, with the problem when the previous user message stated one), a
// pattern (a recurring procedure), or a decision.
func agentRules(s, speaker string, m Message, prevUser *Message) []Candidate {
	for _, re := range reCase {
		if !re.MatchString(s) {
			continue
		}
		c := newCandidate(ScopeAgent, Case, speaker, "", 1, trimObject(s), s, speaker, m)
		if prevUser != nil {
			if problem := problemOf(prevUser.Text); problem != "" {
				who := prevUser.Name
				if who == "" {
					who = "User"
				}
				c.Text = "Problem: " + ResolveSpeaker(problem, who) + " Solution: " + c.Text
				c.Abstract = Abstract(c.Text)
				c.Sources = []string{prevUser.ID, m.ID}
			}
		}
		return []Candidate{c}
	}
	for _, re := range rePattern {
		if re.MatchString(s) {
			return []Candidate{newCandidate(ScopeAgent, Pattern, speaker, "", 1, trimObject(s), s, speaker, m)}
		}
	}
	if reDecision.MatchString(s) {
		return []Candidate{newCandidate(ScopeAgent, Decision, speaker, "", 1, trimObject(s), s, speaker, m)}
	}
	return nil
}

// problemOf is the first sentence of a user message that states a problem, or "".
func problemOf(text string) string {
	for _, s := range Sentences(text) {
		if reProblem.MatchString(s) {
			return Abstract(s)
		}
	}
	return ""
}

var (
	reCorrectionPrefix = regexp.MustCompile(`(?i)^(?:actually|sorry|correction|oops|wait|no|nope|my bad|scratch that|i misspoke|to correct myself)\b[\s,:;!.—–-]*`)
	reNotX             = regexp.MustCompile(`(?i)^(.+?)(,)?\s+(?:and\s+)?not\s+(?:in\s+|at\s+)?(.+?)[.!]*$`)
	reNotXY            = regexp.MustCompile(`(?i)^not\s+(.+?)[,;]\s*(?:but\s+)?(.+?)[.!]*$`)
	reCopula           = regexp.MustCompile(`(?i)^(?:i'm|i am|i was|we're|we are|my \w+ is)\s+`)
	reItsY             = regexp.MustCompile(`(?i)^(?:it's|it is|it was|that's|that is|that was|i meant|i mean|i said|(?:his|her|its|their) name is|(?:he|she|it)'s called|(?:he|she|it) is called)\s+(.+)$`)
)

// correct handles a correction ("Actually, it's Rex, not Max." / "Sorry, I meant Austin." /
// "I live in Austin, not Boston."): the corrected candidate of this extraction is replaced by
// one with the new value (keeping both messages as sources), or the corrected clause is
// extracted and replaces what it contradicts. It reports whether it consumed the sentence and
// returns what it stored, so that the message's own earlier statement of the slot goes too.
func (x *extraction) correct(s, speaker string, m Message) (fixed []Candidate, ok bool) {
	rest := s
	prefixed := false
	if loc := reCorrectionPrefix.FindStringIndex(s); loc != nil && loc[1] < len(s) {
		rest, prefixed = s[loc[1]:], true
	}
	var newPart, oldPart string
	switch g := reNotXY.FindStringSubmatch(rest); {
	case g != nil:
		oldPart, newPart = g[1], g[2]
	default:
		if g := reNotX.FindStringSubmatch(rest); g != nil && (prefixed || g[2] == ",") {
			newPart, oldPart = g[1], g[3]
		} else if prefixed {
			newPart = rest
		} else {
			return nil, false
		}
	}
	newPart, oldPart = strings.TrimSpace(newPart), trimObject(oldPart)
	if g := reItsY.FindStringSubmatch(newPart); g != nil {
		newPart = trimObject(g[1])
	} else if reFirstPerson.MatchString(newPart) {
		// A whole corrected clause: extract it; it replaces what it contradicts. A statement
		// with no slot to correct ("Nope, but it's my first time going", "Sorry I didn't get
		// back to you sooner") is read like any other sentence, its opening word a reply.
		cs := userRules(newPart, speaker, m)
		if slotted(cs) {
			for _, c := range cs {
				x.dropSlot(c, oldPart)
			}
			x.add(cs...)
			return cs, true
		}
		if len(cs) > 0 {
			return nil, false
		}
		// "I'm 35, not 34": the clause says only the new value.
		newPart = trimObject(reCopula.ReplaceAllString(newPart, ""))
	}
	if newPart == "" || len(strings.Fields(newPart)) > 5 {
		return nil, false
	}
	i := x.corrected(speaker, oldPart)
	if i < 0 {
		return nil, false
	}
	old := x.out[i]
	c := old
	if oldPart == "" {
		c.Value = newPart
		c.Text = ResolveSpeaker(newPart, speaker)
		if old.Value != "" {
			c.Text = replaceFold(old.Text, old.Value, newPart)
		}
	} else {
		c.Value = replaceFold(old.Value, oldPart, newPart)
		c.Text = replaceFold(old.Text, oldPart, newPart)
	}
	if strings.HasPrefix(c.Attribute, "likes ") || strings.HasPrefix(c.Attribute, "habit ") {
		c.Attribute = strings.Fields(c.Attribute)[0] + " " + Normalize(c.Value)
	}
	c.Abstract = Abstract(c.Text)
	c.Sources = append(append([]string(nil), old.Sources...), m.ID)
	x.out = append(x.out[:i], x.out[i+1:]...)
	x.add(c)
	return []Candidate{c}, true
}

// corrected is the index of the latest user candidate of the speaker that states old (any
// slot-holding candidate when old is empty), or -1.
func (x *extraction) corrected(speaker, old string) int {
	norm := Normalize(old)
	for i := len(x.out) - 1; i >= 0; i-- {
		c := x.out[i]
		if c.Scope != ScopeUser || c.Subject != speaker {
			continue
		}
		if norm == "" {
			if c.Attribute != "" {
				return i
			}
			continue
		}
		v := " " + Normalize(c.Value) + " "
		if strings.Contains(v, " "+norm+" ") {
			return i
		}
	}
	return -1
}

// slotted reports whether one of cs fills a slot (a profile field, a preference, a person)
// that a correction can replace.
func slotted(cs []Candidate) bool {
	for _, c := range cs {
		if c.Attribute != "" {
			return true
		}
	}
	return false
}

// sameSlot reports whether o fills the slot c fills: the same scope, subject and attribute.
func sameSlot(o, c Candidate) bool {
	return c.Attribute != "" && o.Scope == c.Scope && Normalize(o.Subject) == Normalize(c.Subject) &&
		Normalize(o.Attribute) == Normalize(c.Attribute)
}

// dropSlot removes the candidates of this extraction that c corrects: the same subject and
// slot, or, for slot-less memories, the one stating old.
func (x *extraction) dropSlot(c Candidate, old string) {
	kept := x.out[:0]
	for _, o := range x.out {
		same := sameSlot(o, c)
		if !same && old != "" && c.Attribute != "" && o.Category == c.Category && o.Subject == c.Subject &&
			strings.Contains(" "+Normalize(o.Value)+" ", " "+Normalize(old)+" ") {
			same = true
		}
		if !same {
			kept = append(kept, o)
		}
	}
	x.out = kept
}

// replaceFold replaces the first case-insensitive occurrence of old in s by new.
func replaceFold(s, old, new string) string {
	if old == "" {
		return s
	}
	i := strings.Index(strings.ToLower(s), strings.ToLower(old))
	if i < 0 {
		return s
	}
	return s[:i] + new + s[i+len(old):]
}
