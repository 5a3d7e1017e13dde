package memory

import (
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jdkato/prose/v2"
)

// A proposition is one sentence of a message read as a fact about its speaker: greetings,
// vocatives, interjections and fillers taken off ("Wow, Caroline, I just got back from
// Paris!" → "I got back from Paris."), chit-chat and reactions ("That's awesome!", "You're so
// brave", "Take care!") dropped. Which words are which comes from a part-of-speech tagger
// (prose's averaged perceptron, trained on the Penn Treebank tag set, pure Go with its
// weights embedded), not from lists of phrasings.

// tagger tokenizes and tags sentences with prose's model, which it holds: loaded by the first
// tagging (about 0.4 s, 28 MB of live heap), so a process that never extracts (a recall
// replica, an idle membus up) does not carry it; read only by tagging after that, so the
// concurrent extractions of one extractor share it.
type tagger struct {
	once  sync.Once
	model *prose.Model
}

// newTagger returns a tagger whose model loads on first use.
func newTagger() *tagger { return &tagger{} }

// loaded returns the model, loading it the first time. nil if prose cannot load its embedded
// weights (then each tagging loads them itself: slow, never wrong).
func (tg *tagger) loaded() *prose.Model {
	tg.once.Do(func() {
		doc, err := prose.NewDocument("", prose.WithSegmentation(false), prose.WithExtraction(false))
		if err == nil {
			tg.model = doc.Model
		}
	})
	return tg.model
}

// words tokenizes and tags one sentence.
func (tg *tagger) words(s string) []prose.Token {
	s = reContractionPunct.ReplaceAllString(s, "$1 $2")
	opts := []prose.DocOpt{prose.WithSegmentation(false), prose.WithExtraction(false)}
	if model := tg.loaded(); model != nil {
		opts = append(opts, prose.UsingModel(model))
	}
	doc, err := prose.NewDocument(s, opts...)
	if err != nil {
		return nil
	}
	toks := doc.Tokens()
	for i := range toks {
		if toks[i].Text == "—" || toks[i].Text == "–" {
			toks[i].Tag = ":" // a dash, which the model reads as a verb
		}
	}
	return toks
}

// reContractionPunct is a contraction right before punctuation: prose's tokenizer drops both
// ("It isn't." → "It is", "Others can't, but …" → "Others ca but …", "The book is John's." →
// "… is John"), so a space goes between them first.
var reContractionPunct = regexp.MustCompile(`(?i)(n't|'s|'re|'ve|'ll|'d|'m)([.,!?;:]+)`)

// fillers are adverbs that carry no fact ("I'm so excited", "I just got back", "really
// powerful"); they are dropped where the tagger reads them as adverbs.
var fillers = wordSet(`so really just super pretty totally actually definitely truly honestly seriously literally
	basically absolutely kinda quite very sooo soo indeed certainly surely anyway anyways also too lately`)

// discourse are words that open a sentence without stating anything: interjections the
// tagger may miss, thanks and greetings.
var discourse = wordSet(`yeah yes yep yup no nope oh ooh wow whoa hey hi hello hiya thanks thank ok okay aw aww
	omg haha lol hmm um uh well sure absolutely definitely totally great awesome cool nice right congrats
	congratulations sorry gosh alright dear man`)

// reactionStart opens a sentence that reacts to the conversation ("That's great", "It
// sounds fun", "You're so brave", "Sounds like a plan").
var reactionStart = wordSet(`that that's it it's this this's you you're your you've you'll sounds sound looks glad good
	what's here's there's`)

func isVerbTag(t string) bool { return strings.HasPrefix(t, "VB") || t == "MD" }

// proposition cleans a sentence into a proposition and scores how much of a fact about the
// speaker it is; ok is false for chit-chat and reactions.
func (tg *tagger) proposition(s string) (text string, score int, self, ok bool) {
	p := tg.propose(s)
	return p.text, p.score, p.self, p.ok
}

// prop is a sentence read as a proposition: its text, how much of a fact about the speaker it
// states, whether it speaks of the speaker, whether it is one at all, and whether its "I" was
// put back before a past-tense verb ("Just got back from a road trip" — a chatty sentence that
// states what the speaker did). A sentence that is none because it opens like a reaction may
// still go on about what the sentence before it said (goingOn).
type prop struct {
	text         string
	score        int
	self, ok     bool
	impliedEvent bool
	goesOn       string // no proposition, but what it says goes on from the sentence before
}

func (tg *tagger) propose(s string) prop {
	toks := parentheticals(tg.pastOpening(s, tg.words(s)))
	if len(toks) == 0 {
		return prop{}
	}
	// Leading material: interjections, greetings, vocatives, "Big news:", "you won't believe
	// it -" — words before the first comma, colon or dash that hold no verb, or neither a
	// noun nor the speaker; a time ("Last Friday,") stays.
	for {
		cut := -1
		verb, noun, self := false, false, false
		for i, t := range toks {
			if i > 6 {
				break
			}
			if t.Text == "," || t.Tag == ":" || t.Text == "-" || t.Text == "--" || t.Text == "!" || t.Text == "..." {
				cut = i
				break
			}
			low := strings.ToLower(t.Text)
			verb = verb || isVerbTag(t.Tag) && !discourse[low]
			noun = noun || strings.HasPrefix(t.Tag, "NN") && !discourse[low]
			self = self || firstPersonWord[low]
		}
		if cut < 0 || cut+1 >= len(toks) || verb && (noun || self) || possessed(toks[:cut]) {
			break
		}
		if _, dated := ResolveTime(joinTokens(tokenTexts(toks[:cut])), time.Time{}); dated {
			break
		}
		toks = toks[cut+1:]
	}
	toks = newsFrame(toks)
	said := toks
	toks, talk := sinceWeTalked(toks)
	if len(toks) == 0 || talk && newsOfNothing(toks) {
		return prop{} // "A lot has happened since we last spoke", "Been ages since we talked"
	}
	talkContent, _ := contentWords(said)
	if left, _ := contentWords(toks); talk {
		talkContent -= left // counts towards the score like the other trimmings below
	} else {
		talkContent = 0
	}
	for len(toks) > 0 && (toks[0].Tag == "UH" || discourse[strings.ToLower(toks[0].Text)]) && len(toks) > 1 && toks[1].Tag != "VBZ" && toks[1].Tag != "VBD" {
		toks = toks[1:]
	}
	// A connective to the sentence before ("But …", "And then …", "So …"): the memory stands
	// alone.
	for len(toks) > 1 && (toks[0].Tag == "CC" || (toks[0].Tag == "RB" || toks[0].Tag == "IN") && connective[strings.ToLower(toks[0].Text)]) {
		toks = toks[1:]
		if toks[0].Text == "," {
			toks = toks[1:]
		}
	}
	// What the trimming takes off (a scene-setting clause, a concession) still counts towards
	// how much the sentence says: it ranks the sentence among the message's others.
	var trimmed []prose.Token
	if scene := sceneSetting(toks); len(scene) < len(toks) {
		trimmed, toks = toks[:len(toks)-len(scene)], scene
	}
	toks, event := impliedSubject(toks)
	if len(toks) < 3 {
		return prop{}
	}
	first := strings.ToLower(toks[0].Text)
	second := ""
	if len(toks) > 1 {
		second = strings.ToLower(toks[1].Text)
	}
	// Chit-chat: imperatives ("Keep it up", "Take care", "Let's …"), talk about the listener
	// or the conversation, and reactions.
	if toks[0].Tag == "VB" || first == "let" || first == "let's" || first == "please" || elliptical(toks) {
		return prop{}
	}
	if view, ok := speakersView(toks); ok {
		toks = view
		first, second = "i", "think"
	}
	// A sentence that opens like a reaction but speaks of the speaker's own things ("This has
	// been great for my mental health", "It's been my stress-buster since childhood") states
	// a fact about the speaker.
	mine := !listenerWord[first] && saysMine(toks[1:])
	if !mine && reactionStart[first] || first == "here" && (second == "'s" || second == "is" || second == "are") || !mine && (first == "that" || first == "it" || first == "this") && (second == "'s" || second == "is" || second == "was" || second == "sounds" || second == "looks") {
		return prop{goesOn: goingOn(toks)}
	}
	// A trailing clause on "it" that says what the thing is or did ("…, and it made me
	// appreciate my grandfather's service") is part of the fact; one that only reacts ("…, and
	// it was so powerful", "…, and it was great fun") goes. What the clause says does not rank
	// the sentence among the message's others: its statement does.
	itContent := 0
	if stated := cutReaction(toks); len(stated) < len(toks) {
		if n, _ := contentWords(toks[len(stated):]); n >= minGoesOn {
			itContent = n
		} else {
			toks = stated
		}
	}
	if said := cutConcessive(toks); len(said) < len(toks) {
		trimmed, toks = append(trimmed, toks[len(said):]...), said
	}
	verbs, firstPerson := 0, false
	content, listener := contentWords(trimmed)
	content += talkContent
	var out []string
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		low := strings.ToLower(t.Text)
		if t.Tag == "RB" && !keepAdverb[low] && (fillers[low] || strings.HasSuffix(low, "ly")) {
			continue
		}
		if quantityWord(toks, i) {
			continue
		}
		if isVerbTag(t.Tag) {
			verbs++
		}
		firstPerson = firstPerson || firstPersonWord[low]
		listener = listener || listenerWord[low]
		if fillers[low] && strings.HasPrefix(t.Tag, "JJ") && i+1 < len(toks) && strings.HasPrefix(toks[i+1].Tag, "JJ") {
			continue
		}
		if isContent(t) {
			content++
		}
		out = append(out, written(toks, i)...)
	}
	if verbs == 0 || content < 2 || listener {
		// No statement, or talk with the listener ("I owe you one", "Joanna can see why
		// you're thrilled", "Jon will get the video to you"): chit-chat, not a memory.
		return prop{}
	}
	score := min(content-itContent, 8)
	if firstPerson {
		score += 3
	}
	return prop{text: joinTokens(laterMentions(out)), score: score, self: firstPerson, ok: true, impliedEvent: event}
}

// elliptical reports whether a sentence leaves its object to the sentence before: a "to"
// after a verb that takes one, or a "so" after a verb of thinking, with nothing after it but
// a vocative or the end ("I love to.", "I hope so, Gina."). A preposition that ends a clause
// ("someone to talk to, and …") is no such "to".
func elliptical(toks []prose.Token) bool {
	for i := 1; i < len(toks); i++ {
		low, before := strings.ToLower(toks[i].Text), strings.ToLower(toks[i-1].Text)
		leftOut := low == "to" && takesTo[before] || low == "so" && takesSo[before]
		if !leftOut {
			continue
		}
		if i+1 == len(toks) || toks[i+1].Text == "," || toks[i+1].Text == "." || toks[i+1].Text == "!" {
			return true
		}
	}
	return false
}

var (
	takesTo = wordSet(`love loves loved like likes liked want wants wanted need needs needed hope hopes hoped try tries tried plan plans planned mean means meant wish wishes wished hate hates prefer prefers going have has had got used ought`)
	takesSo = wordSet(`think thinks thought hope hopes hoped guess believe believes suppose imagine expect reckon say says said`)
)

// isContent reports whether a word carries content: a noun, a verb that is no auxiliary, a
// number or an adjective.
func isContent(t prose.Token) bool {
	return strings.HasPrefix(t.Tag, "NN") || strings.HasPrefix(t.Tag, "VB") && !isAux(strings.ToLower(t.Text)) || t.Tag == "CD" || strings.HasPrefix(t.Tag, "JJ")
}

// contentWords counts the content words of toks and reports whether they speak to the
// listener.
func contentWords(toks []prose.Token) (content int, listener bool) {
	for _, t := range toks {
		if isContent(t) {
			content++
		}
		listener = listener || listenerWord[strings.ToLower(t.Text)]
	}
	return content, listener
}

func isAux(w string) bool {
	switch w {
	case "is", "am", "are", "was", "were", "be", "been", "being", "'s", "'m", "'re", "have", "has", "had", "'ve", "do", "does", "did":
		return true
	}
	return false
}

// joinTokens puts tokens back into a sentence: no space before punctuation and clitics.
func joinTokens(toks []string) string {
	toks = dropStrandedCommas(toks)
	var b strings.Builder
	open := false // inside double quotes
	for i, t := range toks {
		quote := t == "\"" || t == "``" || t == "''"
		if quote {
			t = "\""
		}
		space := i > 0 && !noSpaceBefore(t) && toks[i-1] != "("
		switch {
		case quote && open:
			space = false
		case i > 0 && (toks[i-1] == "\"" || toks[i-1] == "``") && !quote && open:
			space = false
		case t == "'" && i > 0 && endsInLetter(toks[i-1]):
			// The tagger splits a trailing apostrophe off its word: a plural possessive
			// ("kids'"), a dropped g ("livin'") or a closing single quote. An opening one
			// stays on the word it opens, so a lone one after a word closes that word.
			space = false
		}
		if quote {
			open = !open
		}
		if space {
			b.WriteByte(' ')
		}
		b.WriteString(t)
	}
	s := strings.TrimSpace(b.String())
	s = strings.TrimRight(s, " ,;:-")
	if s != "" {
		s = strings.ToUpper(s[:1]) + s[1:]
	}
	return s
}

// dropStrandedCommas removes the punctuation a dropped word leaves behind: a comma, semicolon
// or colon right before the sentence's end ("I will always love hiking, too." without "too"),
// and both commas of an aside whose words all went ("My brother, honestly, moved …").
func dropStrandedCommas(toks []string) []string {
	out := make([]string, 0, len(toks))
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t == "," || t == ";" || t == ":" {
			if i+1 < len(toks) && toks[i+1] == "," {
				i++ // the aside's closing comma goes with its opening one
				continue
			}
			if i+1 < len(toks) && (toks[i+1] == "." || toks[i+1] == "!" || toks[i+1] == "?") {
				continue
			}
		}
		out = append(out, t)
	}
	return out
}

func endsInLetter(t string) bool {
	r, _ := utf8.DecodeLastRuneInString(t)
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

func noSpaceBefore(t string) bool {
	switch t {
	case ".", ",", "!", "?", ";", ":", ")", "'s", "'m", "'re", "'ve", "'d", "'ll", "n't", "%", "...":
		return true
	}
	return false
}

// scored is a candidate with how much of a fact about its speaker it states.
type scored struct {
	c     Candidate
	score int
	aside bool // a person or pet named in passing ("my brother Tom"): kept beside the cap
}

// maxPerMessage is how many memories one message gives at most: a turn of conversation
// mostly says one thing worth keeping, and the rest is its setting and the speaker's
// reaction to it.
const maxPerMessage = 2

// bareSubject are the pronouns that, opening a memory, leave it saying little on its own:
// "They offered Melanie a scholarship", "It has been Melanie's favourite escape" — who or what
// was in the sentence before. Such a statement gives way to one that names its subject:
// pronounSubjectCost is taken off its score.
var bareSubject = wordSet(`it this that they these those`)

const pronounSubjectCost = 4

// minOtherScore is the score a statement that does not name the speaker needs to be kept
// ("Melanie: We explored the coast and hit some national parks" stays; "Caroline: The stories
// were inspiring!" goes): a "we" statement with four content words, or a statement about
// something else with seven.
const minOtherScore = 7

// userPropositions reads one user sentence: the rules' memories (profile, preferences,
// people, events, tasks…) with their text cleaned into a proposition, or, when no rule
// matches, the proposition itself as a fact when it is about the speaker. goesOn is what a
// sentence that gives none says about the sentence before it (goingOn), "" for none.
func (tg *tagger) userPropositions(s, speaker string, m Message) (out []scored, goesOn string) {
	p := tg.propose(s)
	clean, score, ok := p.text, p.score, p.ok
	pronounSubject := ok && bareSubject[strings.ToLower(firstWord(clean))]
	cs := userRules(s, speaker, m)
	if len(cs) == 0 && ok && !reRequest.MatchString(s) && !reHedge.MatchString(s) && (p.impliedEvent || reFirstPerson.MatchString(reOpinion.ReplaceAllString(s, ""))) {
		cat := Fact
		if _, dated := ResolveTime(s, m.CreatedAt); dated {
			cat = Event
		}
		cs = []Candidate{newCandidate(ScopeUser, cat, speaker, "", 1, trimObject(clean), s, speaker, m)}
	}
	aside := map[string]bool{}
	for _, r := range relationMentions(s, speaker, m) {
		aside[r.Attribute+"\x00"+r.Text] = true
	}
	resolved := "" // the sentence with the speaker resolved, once for all the candidates
	if ok && len(cs) > 0 {
		resolved = ResolveSpeaker(s, speaker)
	}
	for _, c := range cs {
		if aside[c.Attribute+"\x00"+c.Text] {
			out = append(out, scored{c: c, aside: true})
			continue
		}
		bonus := 0
		switch c.Category {
		case Profile, Preference, Entity:
			bonus = 4
		case Fact, Event, Task:
			if !ok && (c.Category != Task || !reTask.MatchString(s)) {
				continue // chit-chat the rules took for a statement; "Remind me to …" stays a task
			}
		}
		if ok && c.Text == resolved {
			c.Text = ResolveSpeaker(clean, speaker)
			c.Abstract = Abstract(c.Text)
		}
		if !strings.Contains(c.Text, speaker) {
			if score+bonus < minOtherScore {
				continue // a remark that is not about the speaker and says little
			}
			// Whose statement it is: "Melanie: We explored nature and roasted marshmallows."
			c.Text = speaker + ": " + c.Text
			c.Abstract = Abstract(c.Text)
		}
		if pronounSubject {
			bonus -= pronounSubjectCost
		}
		out = append(out, scored{c: c, score: score + bonus})
	}
	if len(out) == 0 {
		goesOn = p.goesOn
	}
	return out, goesOn
}

// mostFactual keeps the n best candidates of one message, in the order they were said.
func mostFactual(cs []scored, n int) []Candidate {
	keep := make([]bool, len(cs))
	for i := range cs {
		keep[i] = cs[i].aside
	}
	for k := 0; k < n; k++ {
		best := -1
		for i := range cs {
			if !keep[i] && (best < 0 || cs[i].score > cs[best].score) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		keep[best] = true
	}
	var out []Candidate
	for i, c := range cs {
		if keep[i] {
			out = append(out, c.c)
		}
	}
	return out
}

// pastOpening tags a sentence again with its first letter in lower case when the capital
// made its first word an imperative or a name and in lower case it is a past-tense verb:
// "Took a short trip to Rome" (Took/VB), "Finished my first marathon" (Finished/NNP) — a
// chatty sentence that leaves out its "I".
func (tg *tagger) pastOpening(s string, toks []prose.Token) []prose.Token {
	if len(toks) < 2 || toks[0].Text == "I" || toks[0].Tag != "VB" && toks[0].Tag != "NNP" && toks[0].Tag != "NN" {
		return toks
	}
	r, size := utf8.DecodeRuneInString(s)
	if !unicode.IsUpper(r) {
		return toks
	}
	again := tg.words(string(unicode.ToLower(r)) + s[size:])
	if len(again) == 0 || again[0].Tag != "VBD" && again[0].Tag != "VBN" {
		return toks
	}
	again[0].Text = toks[0].Text
	return again
}

// sinceWeTalked drops the time of the last conversation ("Since we last spoke, I …", "…
// since our last chat"): it dates nothing a reader can place, and tells of the conversation,
// not of the speaker. talk reports whether there was one.
func sinceWeTalked(toks []prose.Token) (out []prose.Token, talk bool) {
	for i := 0; i+2 < len(toks); i++ {
		if !strings.EqualFold(toks[i].Text, "since") {
			continue
		}
		j := i + 1
		switch strings.ToLower(toks[j].Text) {
		case "we", "our":
		default:
			continue
		}
		j++
		for j < len(toks) && (strings.EqualFold(toks[j].Text, "last") || toks[j].Tag == "RB") {
			j++
		}
		if j >= len(toks) || !talkWord[strings.ToLower(toks[j].Text)] {
			continue
		}
		j++
		for j < len(toks) && (strings.EqualFold(toks[j].Text, "up") || strings.EqualFold(toks[j].Text, "last")) {
			j++ // "since we caught up", "since we chatted last"
		}
		start := i
		switch {
		case j < len(toks) && toks[j].Text == ",":
			j++ // "Since we last spoke, I …"
		case start > 0 && toks[start-1].Text == ",":
			start-- // "…, since we last spoke"
		}
		out = append(append([]prose.Token(nil), toks[:start]...), toks[j:]...)
		return out, true
	}
	return toks, false
}

// talkWord are the words of talking with someone.
var talkWord = wordSet(`talked spoke chatted caught chat talk conversation spoke met`)

// newsOfNothing reports whether what is left of a sentence once the last conversation is
// taken off only announces news ("A lot has happened", "Crazy thing happened", "It's been
// ages"): every noun is a generic thing or a span of time.
func newsOfNothing(toks []prose.Token) bool {
	generic := false
	for i, t := range toks {
		low := strings.ToLower(t.Text)
		generic = generic || genericThing[low]
		// A capital first word is read as a name whatever it is ("Crazy stuff happened").
		if strings.HasPrefix(t.Tag, "NN") && !genericThing[low] && !strings.HasPrefix(low, "i'") && low != "been" && (i > 0 || t.Tag != "NNP") {
			return false
		}
	}
	return generic
}

var genericThing = wordSet(`lot lots things thing stuff something much bunch ton tons ages while days weeks months
	years time forever`)

// parentheticals drops the asides that speak to the listener without saying anything: "you
// know" between commas or at the end ("It's just great, you know?"), "speaking of which" at the
// start and "speaking of" at the end ("I reorganized my shelf, speaking of.").
func parentheticals(toks []prose.Token) []prose.Token {
	low := func(i int) string {
		if i < 0 || i >= len(toks) {
			return ""
		}
		return strings.ToLower(toks[i].Text)
	}
	if low(0) == "speaking" && low(1) == "of" && low(2) == "which" && low(3) == "," {
		toks = toks[4:]
	}
	out := make([]prose.Token, 0, len(toks))
	for i := 0; i < len(toks); i++ {
		end := func(j int) bool { return j >= len(toks) || toks[j].Tag == "." || toks[j].Text == "," }
		switch {
		case low(i) == "," && low(i+1) == "you" && low(i+2) == "know" && end(i+3):
			i += 2 // ", you know" — the comma or the end after it stays
			continue
		case low(i) == "," && low(i+1) == "speaking" && low(i+2) == "of" && end(i+3):
			i += 2
			continue
		}
		out = append(out, toks[i])
	}
	return out
}

// newsFrame drops the frame a speaker puts news in for the listener: "(I just) wanted to let
// you know (that) I joined a travel club", "I have to tell you, we adopted a kitten" — the
// news, which opens with the speaker ("I", "we", "my", "our"), is the proposition.
func newsFrame(toks []prose.Token) []prose.Token {
	for i := 0; i+2 < len(toks) && i < 12; i++ {
		j := -1
		switch w := strings.ToLower(toks[i].Text); {
		case w == "let" && strings.EqualFold(toks[i+1].Text, "you") && strings.EqualFold(toks[i+2].Text, "know"):
			j = i + 3
		case w == "tell" && strings.EqualFold(toks[i+1].Text, "you"):
			j = i + 2
		}
		if j < 0 {
			continue
		}
		for j < len(toks) && (toks[j].Text == "," || toks[j].Text == ":" || strings.EqualFold(toks[j].Text, "that")) {
			j++
		}
		if j+2 < len(toks) {
			switch strings.ToLower(toks[j].Text) {
			case "i", "we", "my", "our":
				return toks[j:]
			}
		}
		return toks
	}
	return toks
}

// possessed reports whether a leading run names a thing of someone's ("My band, …", "Our
// group, 'Green Thumbs', …"): the subject of the sentence before its appositive, not a
// vocative or a headline.
func possessed(run []prose.Token) bool {
	for i := 0; i+1 < len(run); i++ {
		if run[i].Tag == "PRP$" && strings.HasPrefix(run[i+1].Tag, "NN") {
			return true
		}
	}
	return false
}

// sceneSetting drops a clause that only sets the scene for the news after a dash or colon
// ("So much has happened since we last talked - I joined a choir"): when what follows opens
// with "I" and the clause before speaks neither of the speaker ("I", "my", "me") nor of a
// time nor names anything, the news is the proposition.
func sceneSetting(toks []prose.Token) []prose.Token {
	for d := 1; d+2 < len(toks); d++ {
		if toks[d].Text != "-" && toks[d].Text != "--" && toks[d].Tag != ":" {
			continue
		}
		j := d + 1
		for j+1 < len(toks) && toks[j].Tag == "RB" {
			j++
		}
		if toks[j].Text != "I" && !strings.HasPrefix(toks[j].Text, "I'") || len(toks)-j < 5 {
			return toks // no news of the speaker's after it, or too short to stand alone ("I'm hooked!")
		}
		for _, t := range toks[:d] {
			switch strings.ToLower(t.Text) {
			case "i", "my", "me", "mine", "myself":
				return toks
			}
			if strings.HasPrefix(t.Tag, "NNP") {
				return toks // names something: more than a scene ("Harry Potter is amazing - I'm hooked")
			}
		}
		if _, dated := ResolveTime(joinTokens(tokenTexts(toks[:d])), time.Time{}); dated {
			return toks
		}
		return toks[d+1:]
	}
	return toks
}

// cutConcessive drops a trailing concession ("…, even though it took forever", "…, although
// my knee was sore", "…, even if for a bit"): what the sentence states is before it.
func cutConcessive(toks []prose.Token) []prose.Token {
	for i := 2; i+1 < len(toks); i++ {
		if toks[i].Text != "," {
			continue
		}
		switch w := strings.ToLower(toks[i+1].Text); {
		case w == "although" || w == "though":
			return toks[:i]
		case w == "even" && i+2 < len(toks):
			if n := strings.ToLower(toks[i+2].Text); n == "though" || n == "if" {
				return toks[:i]
			}
		}
	}
	return toks
}

// minGoesOn is how many content words a clause or sentence about "it" needs to say more than
// a reaction: "it is the calmest dog at the park", "it is hard on the fingers but relaxing
// after work" (three or more); not "it was so powerful", "it was great fun".
const minGoesOn = 3

// goingOn is the text of a sentence that reacts to the one before it with "it", "this" or
// "that" ("It's hard on the fingers but so relaxing after work", "It was the first time the
// kids saw snow") when it says what the thing is or did rather than only how it felt ("It was
// amazing!"): written out, fillers and quantity words dropped, to be kept with that
// sentence's statement. "" when it says too little, speaks to the listener, or is no such
// sentence; "It sounds …", "It looks …" react to what was heard or seen: "".
func goingOn(toks []prose.Token) string {
	if len(toks) < 2 || !bareSubject[strings.ToLower(toks[0].Text)] {
		return ""
	}
	switch strings.ToLower(toks[1].Text) {
	case "sounds", "looks", "sound", "look":
		return ""
	}
	content, listener := contentWords(toks)
	if content < minGoesOn || listener {
		return ""
	}
	var out []string
	for i := range toks {
		low := strings.ToLower(toks[i].Text)
		if toks[i].Tag == "RB" && !keepAdverb[low] && (fillers[low] || strings.HasSuffix(low, "ly")) || quantityWord(toks, i) {
			continue
		}
		out = append(out, written(toks, i)...)
	}
	text := joinTokens(out)
	return strings.ToLower(text[:1]) + text[1:]
}

// keepAdverb are the adverbs that change what a sentence states: negation and frequency.
var keepAdverb = wordSet(`not n't never no always usually often sometimes rarely seldom once twice again still ago`)

// cutReaction drops a trailing clause on what the sentence said: "…, and it was so powerful",
// "… - it was amazing", "…, which is pretty exciting". The caller keeps one that says what the
// thing is or did (minGoesOn).
func cutReaction(toks []prose.Token) []prose.Token {
	for i := 2; i+1 < len(toks); i++ {
		w := strings.ToLower(toks[i].Text)
		if w != "and" && w != "," && w != "-" && w != "--" && w != ":" && w != ";" {
			continue
		}
		j := i + 1
		if j < len(toks) && strings.EqualFold(toks[j].Text, "and") {
			j++
		}
		if j+1 >= len(toks) {
			continue
		}
		subj := strings.ToLower(toks[j].Text)
		verb := strings.ToLower(toks[j+1].Text)
		if (subj == "it" || subj == "that" || subj == "this" || subj == "which") && (verb == "was" || verb == "is" || verb == "'s" || verb == "felt" || verb == "feels" || verb == "made") {
			return dangling(toks[:i])
		}
	}
	return toks
}

// dangling drops what a cut leaves hanging: a conjunction and the adverbs around it ("I
// felt a mix of emotions, but overall[, it was satisfying]"). Adverbs alone stay ("I moved
// there recently").
func dangling(toks []prose.Token) []prose.Token {
	end, conj := len(toks), false
	for end > 0 {
		t := toks[end-1]
		if t.Tag != "CC" && t.Tag != "RB" && t.Text != "," || keepAdverb[strings.ToLower(t.Text)] {
			break
		}
		conj = conj || t.Tag == "CC"
		end--
	}
	if !conj {
		return toks
	}
	return toks[:end]
}

var firstPersonWord = wordSet(`i my me we our us myself mine ourselves`)

// listenerWord are the words that speak to the listener.
var listenerWord = wordSet(`you your yours yourself you're you've you'll you'd`)

// written spells out a contraction, so that a memory reads as written prose: "it's been" is
// "it has been", "we're" is "we are", "can't" is "cannot", "I'd seen" is "I had seen"; a
// possessive "'s" stays. The tagger splits "'s", "'re", "'m", "'ll" and "n't" off their word
// and keeps "I've", "I'd", "they've" whole.
func written(toks []prose.Token, i int) []string {
	t := toks[i]
	low := strings.ToLower(t.Text)
	if k := strings.IndexByte(low, '\''); k > 0 {
		if full := clitic(low[k:], toks, i); full != "" && full != "is" && full != "has" && full != "not" {
			return []string{t.Text[:k], full}
		}
	}
	switch {
	case low == "ca" && i+1 < len(toks) && toks[i+1].Text == "n't":
		return []string{t.Text[:1] + "annot"}
	case low == "n't" && i > 0 && strings.EqualFold(toks[i-1].Text, "ca"):
		return nil // said by the "cannot" before it
	case low == "wo" && i+1 < len(toks) && toks[i+1].Text == "n't":
		return []string{t.Text[:1] + "ill"}
	case colloquial[low] != nil:
		return colloquial[low]
	case low == "'s" && t.Tag != "VBZ" && (i+1 == len(toks) || !strings.EqualFold(toks[i+1].Text, "been")):
		return []string{t.Text} // a possessive ("Anna's bakery"; "Anna's been" is "has been")
	}
	if full := clitic(low, toks, i); full != "" {
		return []string{full}
	}
	return []string{t.Text}
}

// colloquial are the spoken forms a memory writes out.
var colloquial = map[string][]string{"gonna": {"going", "to"}, "wanna": {"want", "to"}, "gotta": {"have", "to"}}

// connective are the adverbs that tie a sentence to the one before it.
var connective = wordSet(`so then also anyway anyways plus besides`)

// clitic is the word a contracted ending stands for ("'re" → "are"), "" for none; "'s" and
// "'d" before a participle are "has" and "had".
func clitic(end string, toks []prose.Token, i int) string {
	participle := false
	for j := i + 1; j < len(toks); j++ {
		if toks[j].Tag != "RB" {
			participle = toks[j].Tag == "VBN"
			break
		}
	}
	switch end {
	case "'s":
		if participle {
			return "has"
		}
		return "is"
	case "'d":
		if participle {
			return "had"
		}
		return "would"
	case "'re":
		return "are"
	case "'m":
		return "am"
	case "'ve":
		return "have"
	case "'ll":
		return "will"
	case "n't":
		return "not"
	}
	return ""
}

func tokenTexts(toks []prose.Token) []string {
	out := make([]string, len(toks))
	for i, t := range toks {
		out[i] = t.Text
	}
	return out
}

// impliedSubject puts back the "I" a chatty sentence leaves out: "Been busy volunteering" is
// "I've been busy volunteering", "Just started doing aerial yoga" is "I just started …" (an
// adverb before the verb — "just", "finally", "recently" — is looked past),
// "Researching adoption agencies" is "I'm researching …". A gerund that is the subject
// ("Painting's a fun way …", "Seeing her smile made my day") is left alone. "Can't wait to
// see them" is "I can't wait …". event is true when the "I" was put back before a past-tense
// verb that is no feeling ("Got back from a road trip", not "Excited to try it"): the
// sentence says what the speaker did.
func impliedSubject(toks []prose.Token) (out []prose.Token, event bool) {
	v := 0 // the verb, past a leading adverb
	for v+1 < len(toks) && toks[v].Tag == "RB" && impliedAdverb[strings.ToLower(toks[v].Text)] {
		v++
	}
	if len(toks) < v+2 {
		return toks, false
	}
	verb, next := toks[v], toks[v+1].Tag
	var add []prose.Token
	switch {
	case strings.EqualFold(verb.Text, "been"):
		add = []prose.Token{{Text: "I", Tag: "PRP"}, {Text: "'ve", Tag: "VBP"}}
		// "Been volunteering at the shelter", "Been busy training for the race": what the
		// speaker has been doing.
		event = next == "VBG" || strings.HasPrefix(next, "JJ") && v+2 < len(toks) && toks[v+2].Tag == "VBG"
	case v == 0 && (strings.EqualFold(verb.Text, "ca") || strings.EqualFold(verb.Text, "wo")) && toks[1].Text == "n't":
		add = []prose.Token{{Text: "I", Tag: "PRP"}} // "Can't wait to …", "Won't be long …"
	case v == 0 && strings.EqualFold(verb.Text, "gonna"):
		add = []prose.Token{{Text: "I", Tag: "PRP"}, {Text: "'m", Tag: "VBP"}}
	case verb.Tag == "VBD" || verb.Tag == "VBN":
		add = []prose.Token{{Text: "I", Tag: "PRP"}}
		event = next != "TO" && next != "IN" || !strings.HasSuffix(strings.ToLower(verb.Text), "ed")
	case v == 0 && verb.Tag == "VBG" && !isVerbTag(next) && next != "POS" && !finiteVerbBefore(toks[1:], ":"):
		add = []prose.Token{{Text: "I", Tag: "PRP"}, {Text: "'m", Tag: "VBP"}}
	default:
		return toks, false
	}
	rest := append([]prose.Token(nil), toks...)
	rest[0].Text = strings.ToLower(rest[0].Text) // after the subject
	return append(add, rest...), event
}

// impliedAdverb are the adverbs a chatty sentence may open with before the verb whose subject
// it leaves out ("Just got back …", "Finally finished …").
var impliedAdverb = wordSet(`just finally recently already also only actually`)

// finiteVerbBefore reports whether a finite verb comes before the first separator.
func finiteVerbBefore(toks []prose.Token, sep string) bool {
	for _, t := range toks {
		if t.Tag == sep || !strings.ContainsAny(t.Text, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'") {
			return false
		}
		switch t.Tag {
		case "VBD", "VBZ", "VBP", "MD":
			return true
		}
	}
	return false
}

// laterMentions turns the second and later first-person words into the neutral third person,
// so the speaker's name is said once: "I took my kids to see my mom" is "Melanie took their
// kids to see their mom", not "Melanie's kids … Melanie's mom"; "I was nervous, but I was
// ready" is "Jon was nervous, but they were ready", the verb agreeing. A later "I" is "they"
// only when the first mention was "I" too: after "my" or "me" it would read as someone else
// ("My wife and I were …", "They always support me, even when I make mistakes").
func laterMentions(toks []string) []string {
	first := ""
	for i, t := range toks {
		low := strings.ToLower(t)
		if !firstPersonWord[low] || low == "we" || low == "our" || low == "us" || low == "ourselves" {
			continue
		}
		if first == "" {
			first = low
			continue
		}
		switch low {
		case "my":
			toks[i] = "their"
		case "me":
			toks[i] = "them"
		case "myself":
			toks[i] = "themselves"
		case "mine":
			toks[i] = "theirs"
		case "i":
			if first == "i" {
				toks[i] = "they"
				if i+1 < len(toks) {
					toks[i+1] = pluralVerb(toks[i+1])
				}
			}
		}
	}
	return toks
}

// pluralVerb is the form of a first-person singular verb after "they": "was" → "were".
func pluralVerb(v string) string {
	switch v {
	case "am":
		return "are"
	case "was":
		return "were"
	}
	return v
}

// speakersView reads a judgement with a clause ("It's amazing how basketball brings people
// together", "It's so important to teach kids about veterans", "That's sad how …") as the
// speaker's view: "I think it's amazing how …". A bare reaction ("It's great!") has no clause
// and stays a reaction.
func speakersView(toks []prose.Token) ([]prose.Token, bool) {
	if len(toks) < 4 {
		return nil, false
	}
	first := strings.ToLower(toks[0].Text)
	if first != "it" && first != "that" {
		return nil, false
	}
	i := 1
	switch strings.ToLower(toks[i].Text) {
	case "'s", "is", "was":
		i++
	default:
		return nil, false
	}
	for i < len(toks) && toks[i].Tag == "RB" {
		i++
	}
	if i+1 >= len(toks) || !strings.HasPrefix(toks[i].Tag, "JJ") {
		return nil, false
	}
	switch strings.ToLower(toks[i+1].Text) {
	case "how", "that", "to", "when", "seeing", "having":
	default:
		return nil, false
	}
	out := append([]prose.Token{{Text: "I", Tag: "PRP"}, {Text: "think", Tag: "VBP"}}, toks...)
	out[2].Text = strings.ToLower(out[2].Text)
	return out, true
}

// saysMine reports whether a sentence speaks of the speaker's own things ("my", "I", "me"):
// "This has been great for my mental health" is about the speaker, not a reaction.
func saysMine(toks []prose.Token) bool {
	for _, t := range toks {
		if firstPersonWord[strings.ToLower(t.Text)] {
			return true
		}
	}
	return false
}

// quantityWord reports whether the word at i only says how much of what follows there is:
// "some" before a noun phrase ("some new routines"), "all" or "such" before a determiner
// ("all the support", "all my work", "such a great team"), and the focus particle "even"
// ("even went on a hike"). A degree construction stays ("some of", "some 20", "all that",
// "even when …", "even more"). The fact is what there is, not how much of it: what a reader
// takes from "I baked some bread for all my neighbours" is that the speaker baked bread for
// the neighbours. "many", "much" and "a lot of" stay: a question asks "how many", "how much".
func quantityWord(toks []prose.Token, i int) bool {
	next := ""
	if i+1 < len(toks) {
		next = toks[i+1].Tag
	}
	if i > 0 && strings.EqualFold(toks[i-1].Text, "of") {
		return false
	}
	switch strings.ToLower(toks[i].Text) {
	case "even":
		return toks[i].Tag == "RB" && next != "IN" && next != "WRB" && next != "RB"
	case "some":
		return strings.HasPrefix(next, "NN") || strings.HasPrefix(next, "JJ") || next == "VBG"
	case "all", "such":
		return (next == "DT" || next == "PRP$") && !strings.EqualFold(toks[i+1].Text, "that")
	}
	return false
}
