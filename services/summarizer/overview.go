package summarizer

import (
	"regexp"
	"strings"

	"github.com/membus/membus/pkg/memory"
)

// Sections of the cumulative overview, in order (SPEC §6 "Summaries").
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
)

// Update folds an archive's messages into the overview: the title is kept once set, the
// current state follows the newest messages, and the lists append new items without losing
// earlier facts, files or open issues — except questions that were answered.
func (o Overview) Update(msgs []memory.Message) Overview {
	out := Overview{}
	for k, v := range o {
		out[k] = append([]string(nil), v...)
	}
	for _, m := range msgs {
		speaker := m.Name
		if speaker == "" {
			speaker = strings.ToUpper(m.Role[:1]) + m.Role[1:]
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
			switch {
			case reQuestion.MatchString(s) && m.Role == "user":
				out.add("Open Issues", line)
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
		// An assistant reply after an open question answers it.
		if m.Role == "assistant" && len(out["Open Issues"]) > 0 && len(strings.Fields(m.Text)) >= 5 {
			out["Open Issues"] = out["Open Issues"][:len(out["Open Issues"])-1]
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

func (o Overview) add(section, line string) {
	norm := memory.Normalize(line)
	for _, have := range o[section] {
		if memory.Normalize(have) == norm {
			return
		}
	}
	o[section] = append(o[section], line)
	if len(o[section]) > maxPerSection {
		o[section] = o[section][len(o[section])-maxPerSection:]
	}
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
		o[longest] = o[longest][1:]
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
