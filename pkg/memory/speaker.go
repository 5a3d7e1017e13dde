package memory

import (
	"regexp"
	"strings"
)

const adverbs = `really|usually|always|often|never|also|still|just|sometimes|absolutely|mostly|rarely|generally|actually|currently|now|normally|typically|totally|definitely|truly|honestly|seriously|kind of|sort of|no longer`

var (
	reISubject = regexp.MustCompile(`\bI((?:\s+(?:` + adverbs + `))*)\s+([A-Za-z]+n't|do not|did not|[A-Za-z]+)\b`)
	reI        = regexp.MustCompile(`\bI\b`)
	reLowerI   = regexp.MustCompile(`\bi\b([^.]|$)`)
	reIm       = regexp.MustCompile(`(?i)\bI'm\b`)
	reIve      = regexp.MustCompile(`(?i)\bI've\b`)
	reId       = regexp.MustCompile(`(?i)\bI'd\b`)
	reIll      = regexp.MustCompile(`(?i)\bI'll\b`)
	reMy       = regexp.MustCompile(`(?i)\bmy\b`)
	reMe       = regexp.MustCompile(`(?i)\b(?:me|myself)\b-?`)
	reMine     = regexp.MustCompile(`(?i)\bmine\b`)
)

// irregular third-person forms; a verb not listed here and not in regularVerbs is left alone
// (a past tense or a modal needs no change: "Caroline moved", "Caroline can"). regularVerbs
// leaves out the verbs whose past is their present ("put", "set", "cut"): "I put it in the
// fridge" was said of the past as often as not.
var irregular = map[string]string{
	"am": "is", "have": "has", "do": "does", "go": "goes", "don't": "doesn't", "do not": "does not",
	"haven't": "hasn't", "aren't": "isn't", "be": "is",
}

var regularVerbs = wordSet(`live love like hate enjoy prefer work want need think know play watch write use eat
		drink run walk feel own speak study teach plan hope miss adore dislike visit cook make take get keep wish believe
		mean remember forget drive ride swim travel try say see listen sleep wake start finish practice usually
		collect paint draw sing dance bake fish hike climb jog bike commute volunteer attend rent share care agree
		support follow avoid stand skip wear carry bring buy sell build fix learn grow raise worry
		tend struggle manage lead host mentor coach train lift meditate pray vote shop order trust
		appreciate admire dream expect intend celebrate belong identify look come give find call
		help tell ask leave spend check hang send show hear stay move open turn begin seem become pay meet
		sit lose win change add offer wait serve fall reach remain suggest pass decide pull push hold
		talk chat text email invite join explore relax rest feed wander`)

// wordSet is the set of the whitespace-separated words of list.
func wordSet(list string) map[string]bool {
	set := map[string]bool{}
	for _, w := range strings.Fields(list) {
		set[w] = true
	}
	return set
}

// thirdPerson conjugates a first-person present verb for a named subject ("live" → "lives").
func thirdPerson(verb string) string {
	low := strings.ToLower(verb)
	if f, ok := irregular[low]; ok {
		return f
	}
	if !regularVerbs[low] {
		return verb
	}
	switch {
	case strings.HasSuffix(low, "y") && len(low) > 1 && !strings.ContainsRune("aeiou", rune(low[len(low)-2])):
		return verb[:len(verb)-1] + "ies"
	case strings.HasSuffix(low, "s"), strings.HasSuffix(low, "sh"), strings.HasSuffix(low, "ch"),
		strings.HasSuffix(low, "x"), strings.HasSuffix(low, "z"), strings.HasSuffix(low, "o"):
		return verb + "es"
	}
	return verb + "s"
}

// ResolveSpeaker rewrites first-person singular references to the speaker's name and fixes
// the verb agreement of the common verbs: "I live in Boston with my sister" spoken by
// Caroline is "Caroline lives in Boston with Caroline's sister".
func ResolveSpeaker(s, speaker string) string {
	s = strings.ReplaceAll(s, "’", "'")
	s = reLowerI.ReplaceAllString(s, "I$1")
	if strings.Contains(s, "'") { // every contraction below holds an apostrophe
		s = reIm.ReplaceAllString(s, speaker+" is")
		s = reIve.ReplaceAllString(s, speaker+" has")
		s = reId.ReplaceAllString(s, speaker+" would")
		s = reIll.ReplaceAllString(s, speaker+" will")
	}
	if strings.Contains(s, "I") { // both match a capital I, case-sensitively
		s = reISubject.ReplaceAllStringFunc(s, func(m string) string {
			g := reISubject.FindStringSubmatch(m)
			return speaker + g[1] + " " + thirdPerson(g[2])
		})
		s = reI.ReplaceAllString(s, speaker)
	}
	s = reMy.ReplaceAllString(s, speaker+"'s")
	s = reMine.ReplaceAllString(s, speaker+"'s")
	s = reMe.ReplaceAllStringFunc(s, func(m string) string {
		if strings.HasSuffix(m, "-") {
			return m // a compound: "me-time"
		}
		return speaker
	})
	return s
}
