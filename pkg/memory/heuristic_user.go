package memory

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Patterns over user sentences. Proper nouns are matched case-sensitively ([A-Z]…) so "I
// moved to a bigger flat" is no place; everything else is case-insensitive.
const (
	properNoun  = `[A-Z][\w'&-]*(?:\s+(?:of\s+|de\s+|van\s+|von\s+)?[A-Z][\w'&-]*)*`
	givenName   = `[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)?`
	weekdayList = `monday|tuesday|wednesday|thursday|friday|saturday|sunday`
)

var (
	reName        = regexp.MustCompile(`(?i:\bmy name is|\bcall me|\bi go by|\bmy name's)\s+(` + givenName + `)`)
	reLiveNot     = regexp.MustCompile(`(?i:\b(?:i|we)\s+(?:don't|do not|no longer)\s+live\s+in)\s+(?:the\s+)?(` + properNoun + `)`)
	reLive        = regexp.MustCompile(`(?i:\b(?:i|we)(?:'ve|\s+have)?\s+(?:still\s+|currently\s+|now\s+|just\s+|recently\s+|finally\s+)?(?:live|moved|am moving|'m moving|relocated|am living|'m living|am based|'m based)\s+(?:back\s+)?(?:in|to))\s+(?:the\s+)?(` + properNoun + `)`)
	reFrom        = regexp.MustCompile(`(?i:\b(?:i'm|i am)\s+(?:originally\s+)?from|\bi\s+(?:was born|grew up)\s+in|\bmy hometown is)\s+(` + properNoun + `)`)
	reWorkNot     = regexp.MustCompile(`(?i:\bi\s+(?:don't|do not|no longer)\s+work\s+(?:at|for)|\bi\s+(?:left|quit)\s+my\s+job\s+at)\s+(?:the\s+)?(` + properNoun + `)`)
	reWorkAt      = regexp.MustCompile(`(?i:\b(?:i|we)\s+(?:now\s+|currently\s+|still\s+|just\s+)?(?:(?:work|am working|'m working|started working|got a job)\s+(?:at|for)|joined)\s+)(?:the\s+)?(` + properNoun + `)`)
	reWorkAs      = regexp.MustCompile(`(?i)\bi\s+(?:now\s+|currently\s+)?(?:work|am working|'m working)\s+as\s+(?:an?\s+)?([a-z][a-z -]{2,40})`)
	reIAmA        = regexp.MustCompile(`(?i)\bi(?:'m| am)\s+(not\s+|no longer\s+)?(?:a|an)\s+([a-z][a-z-]*(?:\s+[a-z][a-z-]*){0,2})`)
	reAge         = regexp.MustCompile(`(?i)\bi(?:'m| am)\s+(\d{1,3})\s+(?:years?\s+old|yo)\b|\bi\s+(?:just\s+)?turned\s+(\d{1,3})\b`)
	reBirthday    = regexp.MustCompile(`(?i)\bmy birthday is\s+(?:on\s+)?(.+)`)
	reDiet        = regexp.MustCompile(`(?i)\bi(?:'m| am)\s+(not\s+|no longer\s+)?(?:a\s+)?(vegetarian|vegan|pescatarian|gluten-free|lactose intolerant|celiac|teetotal)\b`)
	reAllergy     = regexp.MustCompile(`(?i)\bi(?:'m| am)\s+allergic to\s+(.+)`)
	reSpeak       = regexp.MustCompile(`(?i:\bi\s+speak|\bi(?:'m| am)\s+fluent in)\s+([A-Z][a-z]+(?:(?:,\s*|\s+and\s+)[A-Z][a-z]+)*)`)
	reHasNamed    = regexp.MustCompile(`(?i:\b(?:i|we)(?:'ve)?\s+(?:have|got|have got|adopted|just adopted|own|rescued)\s+(?:a|an|a new|another)\s+((?:[a-z]+\s+){0,2}?[a-z]+)\s+(?:named|called))\s+(` + givenName + `)`)
	reRelIs       = regexp.MustCompile(`(?i:\bmy\s+(?:(?:little|older|younger|big|new|old|elder)\s+)?([a-z]+(?:\s+friend)?)(?:'s name is|\s+is\s+(?:named|called)|\s+is))\s+(` + givenName + `)\b`)
	reIsMyRel     = regexp.MustCompile(`\b(` + givenName + `)\s+(?i:is my\s+(?:(?:little|older|younger|big|new|old|elder)\s+)?([a-z]+(?:\s+friend)?))\b`)
	reRelAppos    = regexp.MustCompile(`(?i:\bmy\s+(?:(?:little|older|younger|big|new|old|elder)\s+)?([a-z]+(?:\s+friend)?),?)\s+(` + givenName + `)\b`)
	reProject     = regexp.MustCompile(`(?i:\b(?:i'm|i am|we're|we are|i've been|we've been)\s+(?:currently\s+|now\s+)?(?:working on|building|developing|writing|making)\s+(?:a|an|the|my|our)?\s*(?:new\s+|side\s+)?(?:[a-z]+\s+)?(?:project|app|game|tool|library|website|startup|book|novel|service|product)\s+(?:called|named)|\bmy\s+(?:side\s+|new\s+)?(?:project|app|startup|book|game)\s+(?:is\s+)?(?:called|named))\s+(` + properNoun + `)`)
	reFavorite    = regexp.MustCompile(`(?i)\bmy\s+(?:all-time\s+|absolute\s+)?favou?rite\s+([a-z]+(?:\s+[a-z]+)?)\s+(?:is|are|was|has always been)\s+(.+)`)
	rePrefNot     = regexp.MustCompile(`(?i)\b(?:i|we)\s+(?:really\s+|just\s+)?(?:don't|do not|no longer|never|don't really)\s+(?:really\s+)?(?:like|enjoy|love)\s+(.+)|\bi used to (?:like|love|enjoy)\s+(.+)|\bi(?:'m| am) (?:not|no longer) (?:a (?:big |huge )?fan of|into)\s+(.+)|\bi(?:'ve| have) (?:gone off|stopped liking|stopped enjoying)\s+(.+)`)
	rePref        = regexp.MustCompile(`(?i)\b(?:i|we)\s+(?:(?:` + adverbs + `)\s+)*(dislike|hate|can't stand|cannot stand|detest|loathe|love|like|enjoy|prefer|adore)\s+(.+)|\bi(?:'m| am)\s+(?:really\s+)?(?:into|a (?:big |huge )?fan of)\s+(.+)`)
	reQuit        = regexp.MustCompile(`(?i)\bi(?:'ve| have)?\s+(?:quit|stopped|gave up|given up)\s+([a-z]+ing\b.*)`)
	reHabit       = regexp.MustCompile(`(?i)\b(?:i|we)\s+(usually|always|often|normally|generally|typically|regularly|never|rarely|seldom|tend to)\s+([a-z].*)`)
	reEveryFirst  = regexp.MustCompile(`(?i)^(?:every|each|on)\s+(?:day|morning|evening|night|week|weekend|weekday|` + weekdayList + `)s?,?\s+i\s+([a-z].*)`)
	reEveryLast   = regexp.MustCompile(`(?i)^i\s+([a-z]+\b.*?\b(?:every|each)\s+(?:day|morning|evening|night|week|weekend|` + weekdayList + `)s?\b.*)`)
	reMyIs        = regexp.MustCompile(`(?i:\bmy\s+([a-z][a-z' ]{1,30}?)\s+(?:is|are)\s+(?:named\s+|called\s+)?)((?:(?:an?|the)\s+(?:[a-z'-]+\s+){0,2})?[A-Z0-9][\w'&.-]*(?:\s+[\w'&.-]+){0,4})`)
	reDecision    = regexp.MustCompile(`(?i)\b(?:we|i)(?:'ve|\s+have)?\s+(?:finally\s+|just\s+|all\s+)?(?:decided|agreed|chose|settled on|opted)\b|\b(?:we|i)(?:'ll|\s+will|'re|\s+are|'m|\s+am)\s+(?:going with|go with|sticking with)\b|\blet's (?:go with|use|stick with)\b|\bthe decision is\b`)
	reTask        = regexp.MustCompile(`(?i)\b(?:remind me to|i need to|i have to|i must|i've got to|i gotta|i should|i still need to|don't forget to|do not forget to)\s+(.+)|^(?:todo|to-do|to do|task)\s*:\s*(.+)`)
	reIntent      = regexp.MustCompile(`(?i)\b(?:i plan to|i'm planning to|i am planning to|i'm going to|i am going to|i want to|i'd like to|i will|i'll|we're going to|we will|we'll|i hope to)\s+(.+)`)
	reValueFirst  = regexp.MustCompile(`^(?:.*,\s+)?([\w'&-]+(?:\s+[\w'&-]+){0,3})\s+(?i:is|are|was)\s+(?i:(?:(?:` + adverbs + `|also)\s+)*)((?i:my)\s+[a-z][a-z' -]{1,40}?)\s*[.!]*$`)
	reFirstPerson = regexp.MustCompile(`(?i)\b(i|i'm|i've|i'd|i'll|my|me|mine|we|we're|our|us)\b`)
	reFirstSubj   = regexp.MustCompile(`(?i)\b(i|i'm|i've|i'd|my|we|our)\b`)
	reRequest     = regexp.MustCompile(`(?i)^(?:please|pls|can you|could you|would you|will you|help me|tell me|show me|give me|write|let me know|i want you to|i'd like you to|i need you to)\b`)
	reHedge       = regexp.MustCompile(`(?i)^(?:i think so|i guess|i see|i don't know|i'm not sure|i am not sure|i agree|i understand|i'm fine|i am fine|i'm good|i was wondering|i'm wondering|i'm curious)\b`)
	reOpinion     = regexp.MustCompile(`(?i)^(?:i think|i believe|i feel like|i guess|i suppose|i'd say|in my opinion|i reckon)\b,?\s*`)
	reTrailTime   = regexp.MustCompile(`(?i)\s+(?:last|next|this|every|each) \w+$|\s+(?:yesterday|today|tomorrow|recently|lately|now|again)$|\s+\w+ \w+ ago$|\s+in \d{4}$`)
	reJobWord     = regexp.MustCompile(`(?i)(?:engineer|developer|designer|teacher|nurse|doctor|lawyer|programmer|scientist|analyst|consultant|accountant|architect|student|manager|chef|pilot|dentist|writer|journalist|photographer|artist|musician|researcher|professor|librarian|pharmacist|electrician|plumber|mechanic|firefighter|officer|therapist|psychologist|veterinarian|vet|farmer|baker|barista|cashier|driver|freelancer|founder|ceo|cto|intern|economist|translator|editor|recruiter|salesperson|marketer|paramedic|surgeon|physician|technician|administrator|clerk|secretary|tutor|coach|trainer)s?$`)
	objectPronoun = wordSet(`it that this them him her you those these what how when where why who whatever something anything everything`)
	// proForm is an object that stands for what the sentence before said: "I love to", "I hope
	// so", "me too". The sentence says nothing on its own.
	proForm   = wordSet(`to so too`)
	notAName  = wordSet(`I I'm I've This That He She It We They You The A An My Our His Her There Here What Who`)
	notAValue = wordSet(`the a an this that these those it its there here what which who whom he she they we you i one all
		everything something nothing anything everyone someone nobody anyone`)
	notHabitVerb = wordSet(`think guess believe know feel mean hope was were went had did said told asked wonder am`)
)

// Relations of a person or pet to the speaker. A single-valued relation (one manager, one
// dog's name per dog word) is a slot whose new value supersedes the old; a multi-valued one
// (sisters, friends) keeps each value in its own slot.
var (
	singleRelations = wordSet(`wife husband partner spouse girlfriend boyfriend fiance fiancee mother father boss manager
		landlord landlady therapist doctor dentist mentor supervisor dog cat puppy kitten hamster rabbit bunny parrot bird
		horse turtle tortoise snake lizard goldfish pony retriever terrier labrador poodle`)
	multiRelations = wordSet(`sister brother son daughter kid child friend colleague coworker cousin aunt uncle grandma
		grandpa grandmother grandfather neighbor teammate niece nephew roommate classmate stepson stepdaughter`)
	relationAlias = map[string]string{"mom": "mother", "mum": "mother", "dad": "father", "co-worker": "coworker",
		"neighbour": "neighbor", "fiancé": "fiance", "fiancée": "fiancee", "best friend": "best friend",
		"retriever": "dog", "terrier": "dog", "labrador": "dog", "poodle": "dog", "puppy": "dog", "kitten": "cat"}
)

// relation returns the canonical relation word and whether it is single-valued; ok is false
// for a word that is no relation ("my car Betsy" is left to other rules).
func relation(word string) (rel string, single, ok bool) {
	rel = strings.ToLower(strings.TrimSpace(word))
	if rel == "best friend" {
		return rel, true, true
	}
	if a, found := relationAlias[rel]; found {
		rel = a
	}
	switch {
	case singleRelations[rel]:
		return rel, true, true
	case multiRelations[rel]:
		return rel, false, true
	}
	return "", false, false
}

// relationSlot is the attribute of a relation: the relation itself when single-valued, the
// relation and the name when not ("sister anna").
func relationSlot(rel string, single bool, name string) string {
	if single {
		return rel
	}
	return rel + " " + Normalize(name)
}

// userRules extracts the memories of one user sentence: at most one main memory (the first
// rule that matches) plus the people and pets it mentions by relation.
func userRules(s, speaker string, m Message) []Candidate {
	var out []Candidate
	main, ok := userMain(s, speaker, m)
	if !ok || main.Category == Fact {
		if c, found := valueFirst(s, speaker, m); found {
			main, ok = c, true
		}
	}
	if ok {
		out = append(out, main)
	}
	for _, rel := range relationMentions(s, speaker, m) {
		if ok && main.Category == Entity && Normalize(main.Value) == Normalize(rel.Value) {
			continue
		}
		out = append(out, rel)
	}
	return out
}

func userMain(s, speaker string, m Message) (Candidate, bool) {
	if reRequest.MatchString(s) || reHedge.MatchString(s) {
		return Candidate{}, false
	}
	f := foldASCII(s)
	mk := func(cat, attr string, pol int, value string) (Candidate, bool) {
		return newCandidate(ScopeUser, cat, speaker, attr, pol, value, s, speaker, m), true
	}
	if g := f.find(reName, "name", "call me", "go by"); g != nil {
		return mk(Profile, "name", 1, g[1])
	}
	if g := f.find(reLiveNot, "live"); g != nil {
		return mk(Profile, "lives in", -1, g[1])
	}
	if g := f.find(reLive, "live", "moved", "moving", "relocated", "living", "based"); g != nil {
		return mk(Profile, "lives in", 1, g[1])
	}
	if g := f.find(reFrom, "from", "born", "grew up", "hometown"); g != nil {
		return mk(Profile, "from", 1, g[1])
	}
	if g := f.find(reWorkNot, "work", "job"); g != nil {
		return mk(Profile, "works at", -1, g[1])
	}
	if g := f.find(reWorkAs, "work"); g != nil {
		return mk(Profile, "job", 1, trimObject(cutAt(g[1], " at ", " for ", " in ")))
	}
	if g := f.find(reWorkAt, "work", "job", "joined"); g != nil {
		return mk(Profile, "works at", 1, g[1])
	}
	if g := f.find(reAge, digits...); g != nil {
		return mk(Profile, "age", 1, g[1]+g[2])
	}
	if g := f.find(reBirthday, "birthday"); g != nil {
		return mk(Profile, "birthday", 1, trimObject(g[1]))
	}
	if g := f.find(reDiet, "veg", "pescatarian", "gluten-free", "lactose", "celiac", "teetotal"); g != nil {
		return mk(Profile, "diet", polarity(g[1] == ""), strings.ToLower(g[2]))
	}
	if g := f.find(reAllergy, "allergic"); g != nil {
		v := trimObject(g[1])
		return mk(Profile, "allergic to "+Normalize(v), 1, v)
	}
	if g := f.find(reSpeak, "speak", "fluent"); g != nil {
		return mk(Profile, "speaks "+Normalize(g[1]), 1, g[1])
	}
	if g := f.find(reHasNamed, "named", "called"); g != nil {
		words := strings.Fields(g[1])
		if rel, single, ok := relation(words[len(words)-1]); ok {
			return mk(Entity, relationSlot(rel, single, g[2]), 1, g[2])
		}
	}
	if g := f.find(reRelIs, "my"); g != nil {
		if rel, single, ok := relation(g[1]); ok && isName(g[2]) {
			return mk(Entity, relationSlot(rel, single, g[2]), 1, g[2])
		}
	}
	if g := f.find(reIsMyRel, "is my"); g != nil {
		if rel, single, ok := relation(g[2]); ok && isName(g[1]) {
			return mk(Entity, relationSlot(rel, single, g[1]), 1, g[1])
		}
	}
	if g := f.find(reProject, "called", "named"); g != nil {
		return mk(Entity, "project "+Normalize(g[1]), 1, g[1])
	}
	if g := f.find(reFavorite, "favorite", "favourite"); g != nil {
		kind := strings.ToLower(g[1])
		return mk(Preference, "favorite "+kind, 1, trimObject(g[2]))
	}
	if g := f.find(reQuit, "quit", "stopped", "gave up", "given up"); g != nil {
		v := habitObject(g[1])
		return mk(Preference, "habit "+Normalize(v), -1, v)
	}
	if g := f.find(rePrefNot, "like", "enjoy", "love", "fan of", "into", "gone off", "stopped"); g != nil {
		if obj := prefObject(g[1]+g[2]+g[3]+g[4], ""); obj != "" {
			return mk(Preference, "likes "+Normalize(obj), -1, obj)
		}
	}
	if g := f.find(rePref, "like", "hate", "stand", "detest", "loathe", "love", "enjoy", "prefer", "adore", "into", "fan of"); g != nil {
		verb := strings.ToLower(g[1])
		if obj := prefObject(g[2]+g[3], verb); obj != "" {
			pol := 1
			switch verb {
			case "dislike", "hate", "can't stand", "cannot stand", "detest", "loathe":
				pol = -1
			}
			return mk(Preference, "likes "+Normalize(obj), pol, obj)
		}
	}
	if g := f.find(reHabit, "usually", "always", "often", "normally", "generally", "typically", "regularly", "never", "rarely", "seldom", "tend to"); g != nil && !notHabitVerb[firstWord(g[2])] {
		v := habitObject(g[2])
		adv := strings.ToLower(g[1])
		return mk(Preference, "habit "+Normalize(v), polarity(adv != "never" && adv != "rarely" && adv != "seldom"), v)
	}
	for _, re := range []struct {
		re    *regexp.Regexp
		words []string
	}{{reEveryFirst, []string{"day", "morning", "evening", "night", "week"}}, {reEveryLast, []string{"every", "each"}}} {
		if g := f.find(re.re, re.words...); g != nil && !notHabitVerb[firstWord(g[1])] && !rePastMarker.MatchString(firstWord(g[1])) {
			v := trimObject(g[1])
			return mk(Preference, "habit "+Normalize(v), 1, v)
		}
	}
	if g := f.find(reIAmA, "i'm", "i am"); g != nil {
		v := trimObject(cutAt(g[2], " at ", " for ", " in ", " with ", " who ", " and "))
		pol := polarity(g[1] == "")
		if reJobWord.MatchString(v) {
			return mk(Profile, "job", pol, v)
		}
		return mk(Profile, "is "+Normalize(v), pol, v)
	}
	if g := f.find(reMyIs, "my"); g != nil {
		attr := strings.ToLower(strings.TrimSpace(g[1]))
		if attr != "name" && len(strings.Fields(attr)) <= 3 {
			return mk(Entity, attr, 1, trimObject(g[2]))
		}
	}
	if f.has("decided", "agreed", "chose", "settled on", "opted", "go with", "going with", "sticking with", "let's", "decision") && reDecision.MatchString(s) {
		return mk(Decision, "", 1, trimObject(s))
	}
	if g := f.find(reTask, "remind", "need to", "have to", "must", "got to", "gotta", "should", "forget to", "todo", "to-do", "to do", "task"); g != nil {
		return mk(Task, "", 1, trimObject(reTrailTime.ReplaceAllString(trimObject(g[1]+g[2]), "")))
	}
	_, dated := ResolveTime(s, m.CreatedAt)
	if dated && reFirstPerson.MatchString(s) {
		return mk(Event, "", 1, trimObject(s))
	}
	if g := f.find(reIntent, "plan", "going to", "want to", "like to", "will", "'ll", "hope to"); g != nil {
		return mk(Task, "", 1, trimObject(g[1]))
	}
	// An opinion ("I think the second option is better") is about the conversation, not the
	// speaker, unless what is thought is first-person too.
	if reFirstSubj.MatchString(reOpinion.ReplaceAllString(s, "")) && len(strings.Fields(s)) >= 5 {
		return mk(Fact, "", 1, trimObject(s))
	}
	return Candidate{}, false
}

// folded is a sentence lower-cased, to skip an expression whose every match holds one of a few
// words when the sentence holds none of them. Outside ASCII nothing is skipped:
// case-insensitive matching folds a few other letters into ASCII ones (the Kelvin sign into k).
type folded struct {
	orig, low string
	ascii     bool
}

func foldASCII(s string) folded {
	var low []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= utf8.RuneSelf:
			return folded{orig: s}
		case c >= 'A' && c <= 'Z':
			if low == nil {
				low = []byte(s)
			}
			low[i] = c + 'a' - 'A'
		}
	}
	if low == nil {
		return folded{orig: s, low: s, ascii: true}
	}
	return folded{orig: s, low: string(low), ascii: true}
}

// has reports whether the sentence may hold one of words (lower-case): always outside ASCII.
func (f folded) has(words ...string) bool {
	if !f.ascii {
		return true
	}
	for _, w := range words {
		if strings.Contains(f.low, w) {
			return true
		}
	}
	return false
}

// find is re's submatches in the sentence, nil without running re when the sentence holds none
// of words, of which each of re's matches holds one.
func (f folded) find(re *regexp.Regexp, words ...string) []string {
	if !f.has(words...) {
		return nil
	}
	return re.FindStringSubmatch(f.orig)
}

// valueFirst reads a sentence that names the value before the slot — "Blue is my favorite
// color!", "Pizza is definitely my favourite food", "Boston is my hometown" — as the rules read
// the slot first ("my favorite color is Blue"), so both orders fill the same slot. The value is
// a short noun phrase (after a leading filler's comma), not a pronoun, article or time ("Today
// is my birthday" is an event); the memory keeps the sentence as said.
func valueFirst(s, speaker string, m Message) (Candidate, bool) {
	g := reValueFirst.FindStringSubmatch(s)
	if g == nil || notAValue[firstWord(g[1])] {
		return Candidate{}, false
	}
	if _, dated := ResolveTime(g[1], m.CreatedAt); dated {
		return Candidate{}, false
	}
	c, ok := userMain(g[2]+" is "+g[1], speaker, m)
	if !ok || c.Category == Fact || c.Category == Event {
		return Candidate{}, false
	}
	c.Text = ResolveSpeaker(s, speaker)
	c.Abstract = Abstract(c.Text)
	return c, true
}

// relationMentions finds the people and pets a sentence names by their relation to the
// speaker: "my sister Anna", "Bob, my manager".
func relationMentions(s, speaker string, m Message) []Candidate {
	if !foldASCII(s).has("my") { // every match of reRelAppos holds it
		return nil
	}
	var out []Candidate
	for _, g := range reRelAppos.FindAllStringSubmatch(s, -1) {
		rel, single, ok := relation(g[1])
		if !ok || !isName(g[2]) {
			continue
		}
		text := fmt.Sprintf("%s's %s is %s.", speaker, rel, g[2])
		c := newCandidate(ScopeUser, Entity, speaker, relationSlot(rel, single, g[2]), 1, g[2], text, speaker, m)
		c.EventTime = nil
		out = append(out, c)
	}
	return out
}

// prefObject cleans the object of a preference; "" when it is no object worth keeping (a
// pronoun, a clause about something else).
func prefObject(obj, verb string) string {
	obj = trimObject(obj)
	if verb == "prefer" && !strings.HasPrefix(strings.ToLower(obj), "to ") {
		obj = cutAt(obj, " over ", " rather than ", " instead of ", " to ")
	}
	obj = strings.TrimSpace(reTrailTime.ReplaceAllString(obj, ""))
	if obj == "" || objectPronoun[firstWord(obj)] || proForm[strings.ToLower(obj)] || len(strings.Fields(obj)) > 8 {
		return ""
	}
	return obj
}

func habitObject(v string) string {
	return strings.TrimSpace(reTrailTime.ReplaceAllString(trimObject(v), ""))
}

func cutAt(s string, seps ...string) string {
	low := strings.ToLower(s)
	for _, sep := range seps {
		if i := strings.Index(low, sep); i > 0 {
			s, low = s[:i], low[:i]
		}
	}
	return s
}

// isName reports whether a capitalised capture is a name, not a pronoun or article.
func isName(v string) bool {
	f := strings.Fields(v)
	return len(f) > 0 && !notAName[f[0]]
}

func firstWord(s string) string {
	f := strings.Fields(strings.ToLower(s))
	if len(f) == 0 {
		return ""
	}
	return strings.Trim(f[0], ",.;:!?")
}

func polarity(positive bool) int {
	if positive {
		return 1
	}
	return -1
}
