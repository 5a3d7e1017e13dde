package summarizer

import (
	"regexp"
	"strings"

	"github.com/membus/membus/pkg/memory"
)

// Sections of the cumulative overview, in order (docs/design.md §6 "Summaries").
var Sections = []string{"Session Title", "Current State", "Task & Goals", "Key Facts & Decisions",
	"Files & Context", "Errors & Corrections", "Open Issues"}

const (
	maxOverview    = 4000
	maxPerSection  = 12
	maxBulletChars = 240
)

// Overview is a parsed cumulative overview: section name → bullets (Title and Current State
// hold one line each).
type Overview map[string][]string

// Parse reads an overview written by String.
func Parse(text string) Overview {
	o := Overview{}
	cur := ""
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, " ")
		if strings.HasPrefix(line, "## ") {
			cur = strings.TrimPrefix(line, "## ")
			continue
		}
		if cur == "" || strings.TrimSpace(line) == "" {
			continue
		}
		o[cur] = append(o[cur], strings.TrimPrefix(strings.TrimSpace(line), "- "))
	}
	return o
}

var (
	reGoal     = regexp.MustCompile(`(?i)\b(i want to|we want to|i need to|we need to|goal|trying to|plan to|planning to|help me|i'd like to|we should)\b`)
	reDecided  = regexp.MustCompile(`(?i)\b(decided|agreed|will use|going with|chose|settled on|let's go with|we'll)\b`)
	reFile     = regexp.MustCompile(`(?:[\w.-]+/)+[\w.-]+\.\w{1,6}\b|\b[\w-]+\.(?:go|py|ts|js|json|yaml|yml|md|sql|txt|csv|toml)\b|https?://\S+`)
	reError    = regexp.MustCompile(`(?i)\b(error|failed|failure|exception|panic|bug|broken|crash|actually|correction|wrong|mistake|instead)\b`)
	reQuestion = regexp.MustCompile(`\?\s*$`)
	// A correction restates a fact: the bullet it corrects is replaced by it.
	reCorrection = regexp.MustCompile(`(?i)\b(actually|correction|i meant|i misspoke|was wrong|is wrong|no longer|instead of|rather than|changed to)\b`)
	// A resolution closes the open issues it talks about.
	reResolved = regexp.MustCompile(`(?i)\b(resolved|fixed|solved|answered|settled|figured out|works now|working now|closed|sorted out)\b`)
)

// Update folds an archive's messages into the overview section by section: the title is kept
// once set, the current state follows the newest messages, and the lists keep their items,
// update the one a new line restates (near-duplicate), and append new ones. Nothing earlier is
// lost unless the conversation resolved it (an open issue that a later message resolves, or a
// question the assistant answered right away, leaves Open Issues) or corrected it (a correction
// replaces the fact it corrects, and is noted under Errors & Corrections).
func (o Overview) Update(msgs []memory.Message) Overview {
	out := Overview{}
	for k, v := range o {
		out[k] = append([]string(nil), v...)
	}
	var asked []string // questions of the last user message, answered by an assistant reply
	for _, m := range msgs {
		speaker := m.Name
		if speaker == "" {
			speaker = strings.ToUpper(m.Role[:1]) + m.Role[1:]
		}
		if m.Role == "user" {
			asked = nil
		}
		for _, f := range reFile.FindAllString(m.Text, -1) {
			out.add("Files & Context", strings.TrimRight(f, ".,;:)"))
		}
		for _, raw := range sentences(m.Text) {
			s := strings.Join(strings.Fields(raw), " ")
			if len(strings.Fields(s)) < 3 {
				continue
			}
			line := cap(speaker + ": " + s)
			if len(out["Session Title"]) == 0 && m.Role == "user" {
				out["Session Title"] = []string{cap(s)}
			}
			question := reQuestion.MatchString(s)
			if !question && reResolved.MatchString(s) {
				out.resolve(s)
			}
			switch {
			case question && m.Role == "user":
				out.add("Open Issues", line)
				asked = append(asked, line)
			case reCorrection.MatchString(s):
				out.correct(s, line)
				out.add("Errors & Corrections", line)
			case reError.MatchString(s):
				out.add("Errors & Corrections", line)
			case reDecided.MatchString(s):
				out.add("Key Facts & Decisions", line)
			case reGoal.MatchString(s):
				out.add("Task & Goals", line)
			case m.Role == "user" && len(strings.Fields(s)) >= 6:
				out.add("Key Facts & Decisions", line)
			}
		}
		// An assistant reply right after a question answers it.
		if m.Role == "assistant" && len(asked) > 0 && len(strings.Fields(m.Text)) >= 5 {
			for _, q := range asked {
				out.remove("Open Issues", q)
			}
			asked = nil
		}
	}
	if n := len(msgs); n > 0 {
		last := msgs[n-1]
		if s := firstSentence(last.Text); s != "" {
			who := last.Name
			if who == "" {
				who = last.Role
			}
			out["Current State"] = []string{cap("Last: " + who + ": " + s)}
		}
	}
	return out
}

// add appends line to section, or updates the item it restates (the same normalised text, or
// token Jaccard ≥ 0.7 as memory dedup says) in place. A full section evicts its oldest item
// that is not a decision or a file, else its oldest.
func (o Overview) add(section, line string) {
	norm := memory.Normalize(line)
	for i, have := range o[section] {
		hn := memory.Normalize(have)
		if hn == norm {
			return
		}
		if memory.Jaccard(hn, norm) >= memory.JaccardDuplicate {
			o[section][i] = line
			return
		}
	}
	o[section] = append(o[section], line)
	if len(o[section]) > maxPerSection {
		o.evict(section)
	}
}

// evict drops the oldest item of section that is not a decision or a file, else the oldest.
func (o Overview) evict(section string) {
	items := o[section]
	drop := 0
	for i, it := range items {
		if !reDecided.MatchString(it) && !reFile.MatchString(it) {
			drop = i
			break
		}
	}
	o[section] = append(items[:drop:drop], items[drop+1:]...)
}

func (o Overview) remove(section, line string) {
	items := o[section]
	for i, it := range items {
		if it == line {
			o[section] = append(items[:i:i], items[i+1:]...)
			return
		}
	}
}

// resolve removes the open issues a resolution sentence talks about: those sharing at least
// two content words with it, or half of their own.
func (o Overview) resolve(sentence string) {
	words := contentWords(sentence)
	var keep []string
	for _, it := range o["Open Issues"] {
		iw := contentWords(stripSpeaker(it))
		shared := overlap(iw, words)
		if shared >= 2 || (len(iw) > 0 && 2*shared >= len(iw)) {
			continue
		}
		keep = append(keep, it)
	}
	if len(keep) == 0 {
		delete(o, "Open Issues")
		return
	}
	o["Open Issues"] = keep
}

// correct replaces the fact or goal a correction restates (the item sharing the most content
// words with it: at least two, and half of the item's or of the correction's) by the
// correction, so the overview states the corrected fact only.
func (o Overview) correct(sentence, line string) {
	words := contentWords(sentence)
	best, bestSec, bestShared := -1, "", 0
	for _, sec := range []string{"Key Facts & Decisions", "Task & Goals"} {
		for i, it := range o[sec] {
			iw := contentWords(stripSpeaker(it))
			shared := overlap(iw, words)
			if shared >= 2 && (2*shared >= len(iw) || 2*shared >= len(words)) && shared > bestShared {
				best, bestSec, bestShared = i, sec, shared
			}
		}
	}
	if best >= 0 {
		o[bestSec][best] = line
	}
}

var stopWords = map[string]bool{"the": true, "and": true, "for": true, "are": true, "was": true, "were": true, "is": true,
	"it": true, "its": true, "this": true, "that": true, "with": true, "from": true, "has": true, "have": true, "had": true,
	"does": true, "did": true, "not": true, "but": true, "our": true, "your": true, "you": true, "they": true, "them": true,
	"will": true, "can": true, "should": true, "would": true, "need": true, "needs": true, "now": true, "all": true,
	"any": true, "there": true, "what": true, "which": true, "who": true, "how": true, "why": true, "when": true,
	"actually": true, "question": true, "issue": true, "problem": true, "resolved": true, "fixed": true, "solved": true,
	"answered": true, "settled": true, "closed": true, "correction": true, "instead": true, "rather": true, "than": true}

// contentWords are the normalised words of text that carry meaning (numbers included).
func contentWords(text string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.Fields(memory.Normalize(text)) {
		if stopWords[w] || (len(w) < 3 && !isNumber(w)) {
			continue
		}
		out[w] = true
	}
	return out
}

func isNumber(w string) bool {
	for _, r := range w {
		if r < '0' || r > '9' {
			return false
		}
	}
	return w != ""
}

func overlap(a, b map[string]bool) int {
	n := 0
	for w := range a {
		if b[w] {
			n++
		}
	}
	return n
}

// stripSpeaker drops the "Speaker: " prefix of a bullet.
func stripSpeaker(item string) string {
	if who, rest, ok := strings.Cut(item, ": "); ok && len(strings.Fields(who)) <= 3 {
		return rest
	}
	return item
}

// String renders the overview, trimming the oldest list items until it fits 4000 chars.
func (o Overview) String() string {
	for {
		s := o.render()
		if len(s) <= maxOverview {
			return s
		}
		// Drop the oldest bullet of the longest list section.
		longest := ""
		for _, sec := range Sections[2:] {
			if len(o[sec]) > len(o[longest]) {
				longest = sec
			}
		}
		if longest == "" || len(o[longest]) == 0 {
			return s[:maxOverview]
		}
		o.evict(longest)
	}
}

func (o Overview) render() string {
	var b strings.Builder
	for _, sec := range Sections {
		items := o[sec]
		if len(items) == 0 {
			continue
		}
		b.WriteString("## " + sec + "\n")
		for _, it := range items {
			if sec == "Session Title" || sec == "Current State" {
				b.WriteString(it + "\n")
			} else {
				b.WriteString("- " + it + "\n")
			}
		}
	}
	return strings.TrimSpace(b.String())
}

// Abstract is a one-line summary of at most 256 chars: the title and the newest key fact.
func (o Overview) Abstract() string {
	parts := []string{}
	if t := o["Session Title"]; len(t) > 0 {
		parts = append(parts, t[0])
	}
	if k := o["Key Facts & Decisions"]; len(k) > 0 {
		parts = append(parts, k[len(k)-1])
	}
	if len(parts) == 0 {
		if c := o["Current State"]; len(c) > 0 {
			parts = append(parts, c[0])
		}
	}
	return memory.Abstract(strings.Join(parts, " — "))
}

func firstSentence(s string) string {
	if ss := sentences(s); len(ss) > 0 {
		return strings.Join(strings.Fields(ss[0]), " ")
	}
	return ""
}

// sentences splits at . ! ? followed by white space or the end, and at line breaks, so
// file names and numbers stay whole.
func sentences(text string) []string {
	var out []string
	start := 0
	flush := func(end int) {
		if s := strings.TrimSpace(text[start:end]); s != "" {
			out = append(out, s)
		}
		start = end
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c == '\n':
			flush(i + 1)
		case (c == '.' || c == '!' || c == '?') && (i+1 == len(text) || text[i+1] == ' ' || text[i+1] == '\n'):
			flush(i + 1)
		}
	}
	flush(len(text))
	return out
}

func cap(s string) string {
	if r := []rune(s); len(r) > maxBulletChars {
		return string(r[:maxBulletChars-1]) + "…"
	}
	return s
}
