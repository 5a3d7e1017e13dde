package memory

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

const (
	weekdayNames = `monday|tuesday|wednesday|thursday|friday|saturday|sunday`
	// weekdayShort are the weekdays' short forms, read after "last", "next" or "this" only ("last
	// Tues."; "on Sat" could be the verb).
	weekdayShort = `mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun`
	monthNames   = `january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec`
	countWords   = `a|an|one|two|three|four|five|six|seven|eight|nine|ten|a couple of|a few|couple of|few|\d+`
)

var (
	reISODate      = regexp.MustCompile(`\b(\d{4})-(\d{2})-(\d{2})\b`)
	reDayBefore    = regexp.MustCompile(`(?i)\bthe day before yesterday\b`)
	reDayAfter     = regexp.MustCompile(`(?i)\bthe day after tomorrow\b`)
	reYesterday    = regexp.MustCompile(`(?i)\b(yesterday|last night)\b`)
	reToday        = regexp.MustCompile(`(?i)\b(today|tonight|this morning|this afternoon|this evening|earlier today)\b`)
	reTomorrow     = regexp.MustCompile(`(?i)\btomorrow\b`)
	reLastUnit     = regexp.MustCompile(`(?i)\b(?:last|past|previous) (week|month|year|weekend)\b`)
	reNextUnit     = regexp.MustCompile(`(?i)\b(?:next|the coming|coming) (week|month|year|weekend)\b`)
	reThisWeekend  = regexp.MustCompile(`(?i)\bthis (?:coming )?weekend\b`)
	reRelDay       = regexp.MustCompile(`(?i)\b(last|this past|past|next|this coming|coming|this|on) (` + weekdayNames + `)\b|\b(last|this past|past|next|this coming|coming|this) (` + weekdayShort + `)\b\.?`)
	reAgo          = regexp.MustCompile(`(?i)\b(` + countWords + `) (day|week|month|year)s? ago\b`)
	reIn           = regexp.MustCompile(`(?i)\bin (` + countWords + `) (day|week|month|year)s?\b`)
	reFromNow      = regexp.MustCompile(`(?i)\b(` + countWords + `) (day|week|month|year)s? from now\b`)
	reMonthDay     = regexp.MustCompile(`(?i)\b(` + monthNames + `)\.? (\d{1,2})(?:st|nd|rd|th)?\b(?:,? (\d{4}))?`)
	reDayMonth     = regexp.MustCompile(`(?i)\b(?:the )?(\d{1,2})(?:st|nd|rd|th)? (?:of )?(` + monthNames + `)\b(?:,? (\d{4}))?`)
	reInMonth      = regexp.MustCompile(`\b(?i:in|since|during|last|this|next|early|late) (January|February|March|April|May|June|July|August|September|October|November|December)\b(?: (\d{4}))?`)
	reInYear       = regexp.MustCompile(`(?i)\b(?:in|since|during|back in) ((?:19|20)\d{2})\b`)
	reFutureMarker = regexp.MustCompile(`(?i)\b(will|'ll|going to|gonna|plan to|planning to|planned to|want to|hope to|am flying|'m flying|am leaving|'m leaving|next|upcoming|tomorrow)\b`)
	rePastMarker   = regexp.MustCompile(`(?i)\b(was|were|went|had|did|got|saw|met|took|ran|came|ate|bought|made|left|flew|gave|\w+[^e\s]ed)\b`)
)

// reMonthPrefixLen is how much of a month's name identifies it ("sept" → "sep").
const reMonthPrefixLen = 3

// weekdays by the first three letters of their names.
var weekdays = map[string]time.Weekday{"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday,
	"wed": time.Wednesday, "thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday}

var months = map[string]time.Month{"jan": time.January, "feb": time.February, "mar": time.March, "apr": time.April,
	"may": time.May, "jun": time.June, "jul": time.July, "aug": time.August, "sep": time.September, "oct": time.October,
	"nov": time.November, "dec": time.December}

var numbers = map[string]int{"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
	"seven": 7, "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "couple of": 2, "a few": 3, "few": 3}

// tense is how a sentence points in time, for expressions that name a day without saying
// which one ("on Saturday", "on May 3rd").
type tense int

const (
	tenseNone tense = iota
	tensePast
	tenseFuture
)

func tenseOf(s string) tense {
	switch {
	case reFutureMarker.MatchString(s):
		return tenseFuture
	case rePastMarker.MatchString(s):
		return tensePast
	}
	return tenseNone
}

// ResolveTime finds a time expression in s and resolves it against the message time to an
// absolute day: "yesterday" said on 8 May 2023 is 7 May 2023, "last Saturday" is 6 May,
// "next month" is 1 June, "on May 3rd" is 3 May 2023 (the nearest May 3rd in the direction
// the sentence's tense points), "in 2019" is 1 January 2019.
func ResolveTime(s string, at time.Time) (time.Time, bool) {
	f := foldASCII(s) // each expression runs only when s holds one of the words its every match holds
	if !f.has(digits...) && !f.has(timeWords...) {
		return time.Time{}, false
	}
	day := time.Date(at.Year(), at.Month(), at.Day(), 0, 0, 0, 0, at.Location())
	if g := f.find(reISODate, digits...); g != nil {
		y, _ := strconv.Atoi(g[1])
		m, _ := strconv.Atoi(g[2])
		d, _ := strconv.Atoi(g[3])
		if m >= 1 && m <= 12 && d >= 1 && d <= 31 {
			return time.Date(y, time.Month(m), d, 0, 0, 0, 0, at.Location()), true
		}
	}
	switch {
	case f.has("day before yesterday") && reDayBefore.MatchString(s):
		return day.AddDate(0, 0, -2), true
	case f.has("day after tomorrow") && reDayAfter.MatchString(s):
		return day.AddDate(0, 0, 2), true
	case f.has("yesterday", "last night") && reYesterday.MatchString(s):
		return day.AddDate(0, 0, -1), true
	case f.has("tomorrow") && reTomorrow.MatchString(s):
		return day.AddDate(0, 0, 1), true
	case f.has("today", "tonight", "this morning", "this afternoon", "this evening") && reToday.MatchString(s):
		return day, true
	}
	if g := f.find(reAgo, "ago"); g != nil {
		return offset(day, count(g[1]), g[2], -1), true
	}
	if g := f.find(reFromNow, "from now"); g != nil {
		return offset(day, count(g[1]), g[2], 1), true
	}
	if g := f.find(reIn, "in "); g != nil {
		return offset(day, count(g[1]), g[2], 1), true
	}
	if f.has("weekend") && reThisWeekend.MatchString(s) {
		d := int(time.Saturday - day.Weekday())
		if day.Weekday() == time.Sunday {
			d = 0
		}
		return day.AddDate(0, 0, d), true
	}
	if g := f.find(reRelDay, "mon", "tue", "wed", "thu", "fri", "sat", "sun"); g != nil {
		qual, name := g[1]+g[3], g[2]+g[4]
		return relativeWeekday(day, strings.ToLower(qual), weekdays[strings.ToLower(name)[:3]], tenseOf(s)), true
	}
	if g := f.find(reMonthDay, digits...); g != nil {
		if t, ok := monthDay(day, g[1], g[2], g[3], tenseOf(s)); ok {
			return t, true
		}
	}
	if g := f.find(reDayMonth, digits...); g != nil {
		if t, ok := monthDay(day, g[2], g[1], g[3], tenseOf(s)); ok {
			return t, true
		}
	}
	if g := f.find(reLastUnit, "last", "past", "previous"); g != nil {
		return shift(day, strings.ToLower(g[1]), -1), true
	}
	if g := f.find(reNextUnit, "next", "coming"); g != nil {
		return shift(day, strings.ToLower(g[1]), 1), true
	}
	if g := f.find(reInMonth, monthWords...); g != nil {
		m := months[strings.ToLower(g[1])[:reMonthPrefixLen]]
		if g[2] != "" {
			y, _ := strconv.Atoi(g[2])
			return time.Date(y, m, 1, 0, 0, 0, 0, day.Location()), true
		}
		return nearest(day, func(y int) time.Time { return time.Date(y, m, 1, 0, 0, 0, 0, day.Location()) }, tenseOf(s), true), true
	}
	if g := f.find(reInYear, digits...); g != nil {
		y, _ := strconv.Atoi(g[1])
		return time.Date(y, 1, 1, 0, 0, 0, 0, day.Location()), true
	}
	return time.Time{}, false
}

// timeWords are the words of which every time expression ResolveTime reads holds one, unless it
// holds a digit: the units (which the weekdays, "today" and "yesterday" end in), "night",
// "tomorrow", the parts of a day, the months' whole names and the weekdays' short forms.
var timeWords = append([]string{"day", "week", "month", "year", "night", "tomorrow", "morning", "afternoon", "evening",
	"mon", "tue", "wed", "thu", "fri", "sat", "sun"}, monthWords...)

// monthWords are the months' whole names.
var monthWords = []string{"january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
	"november", "december"}

// digits are what an expression holding a number holds one of.
var digits = []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}

func count(word string) int {
	if n, ok := numbers[strings.ToLower(word)]; ok {
		return n
	}
	n, _ := strconv.Atoi(word)
	return n
}

func offset(day time.Time, n int, unit string, sign int) time.Time {
	n *= sign
	switch strings.ToLower(unit) {
	case "day":
		return day.AddDate(0, 0, n)
	case "week":
		return day.AddDate(0, 0, 7*n)
	case "month":
		return day.AddDate(0, n, 0)
	default:
		return day.AddDate(n, 0, 0)
	}
}

// relativeWeekday resolves "last Saturday", "next Friday", "this Sunday" and a bare "on
// Monday" (past or coming by the sentence's tense; coming when it says nothing).
func relativeWeekday(day time.Time, qual string, wd time.Weekday, t tense) time.Time {
	back := int(day.Weekday() - wd)
	if back <= 0 {
		back += 7
	}
	ahead := int(wd - day.Weekday())
	if ahead <= 0 {
		ahead += 7
	}
	switch qual {
	case "last", "this past", "past":
		return day.AddDate(0, 0, -back)
	case "next", "this coming", "coming":
		return day.AddDate(0, 0, ahead)
	case "this":
		if wd == day.Weekday() {
			return day
		}
		if t == tensePast {
			return day.AddDate(0, 0, -back)
		}
		return day.AddDate(0, 0, ahead)
	default: // "on Monday"
		if t == tensePast {
			return day.AddDate(0, 0, -back)
		}
		return day.AddDate(0, 0, ahead)
	}
}

// monthDay resolves "May 3rd" / "3 May" (with an optional year): without a year, the nearest
// such day in the direction the tense points.
func monthDay(day time.Time, month, dayOfMonth, year string, t tense) (time.Time, bool) {
	m := months[strings.ToLower(month)[:reMonthPrefixLen]]
	d, err := strconv.Atoi(dayOfMonth)
	if err != nil || d < 1 || d > 31 {
		return time.Time{}, false
	}
	if year != "" {
		y, _ := strconv.Atoi(year)
		return time.Date(y, m, d, 0, 0, 0, 0, day.Location()), true
	}
	return nearest(day, func(y int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, day.Location()) }, t, false), true
}

// nearest picks, among the candidate dates of last year, this year and next year, the one a
// sentence most likely means: the latest one not after today for past tense, the first one
// not before today (this month counts for whole months) for future tense, else the closest.
func nearest(day time.Time, at func(year int) time.Time, t tense, wholeMonth bool) time.Time {
	y := day.Year()
	cands := []time.Time{at(y - 1), at(y), at(y + 1)}
	ref := day
	if wholeMonth {
		ref = time.Date(day.Year(), day.Month(), 1, 0, 0, 0, 0, day.Location())
	}
	switch t {
	case tensePast:
		if !cands[1].After(ref) {
			return cands[1]
		}
		return cands[0]
	case tenseFuture:
		if !cands[1].Before(ref) {
			return cands[1]
		}
		return cands[2]
	}
	best := cands[0]
	for _, c := range cands[1:] {
		if absDur(c.Sub(day)) < absDur(best.Sub(day)) {
			best = c
		}
	}
	return best
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

func shift(day time.Time, unit string, sign int) time.Time {
	switch unit {
	case "week":
		return day.AddDate(0, 0, 7*sign)
	case "weekend":
		// The Saturday of the previous / next weekend.
		d := int(time.Saturday - day.Weekday())
		if sign < 0 {
			return day.AddDate(0, 0, d-7)
		}
		if d <= 0 {
			d += 7
		}
		return day.AddDate(0, 0, d)
	case "month":
		return time.Date(day.Year(), day.Month()+time.Month(sign), 1, 0, 0, 0, 0, day.Location())
	default:
		return time.Date(day.Year()+sign, 1, 1, 0, 0, 0, 0, day.Location())
	}
}

// Period resolves the date a question names to the span of time it covers, for recall to
// prefer what was said or happened then: "on 3 June, 2023" or "on October 13, 2023" is that
// day, "in May 2023" that month, "in June" the latest June that began by now, "in 2023" that
// year; a day without a year is the latest one not after now. Unlike ResolveTime it reads only
// calendar dates ("last week" in a question is relative to when it was asked, not to what was
// said), and to is the end of the span (exclusive).
func Period(s string, now time.Time) (from, to time.Time, ok bool) {
	f := foldASCII(s)
	if !f.has(digits...) && !f.has(monthWords...) {
		return time.Time{}, time.Time{}, false
	}
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, now.Location())
	if g := f.find(reMonthDay, digits...); g != nil {
		if t, ok := monthDay(day, g[1], g[2], g[3], tensePast); ok {
			return t, t.AddDate(0, 0, 1), true
		}
	}
	if g := f.find(reDayMonth, digits...); g != nil {
		if t, ok := monthDay(day, g[2], g[1], g[3], tensePast); ok {
			return t, t.AddDate(0, 0, 1), true
		}
	}
	if g := f.find(reInMonth, monthWords...); g != nil {
		m := months[strings.ToLower(g[1])[:reMonthPrefixLen]]
		var t time.Time
		if g[2] != "" {
			y, _ := strconv.Atoi(g[2])
			t = time.Date(y, m, 1, 0, 0, 0, 0, day.Location())
		} else {
			t = nearest(day, func(y int) time.Time { return time.Date(y, m, 1, 0, 0, 0, 0, day.Location()) }, tensePast, true)
		}
		return t, t.AddDate(0, 1, 0), true
	}
	if g := f.find(reInYear, digits...); g != nil {
		y, _ := strconv.Atoi(g[1])
		t := time.Date(y, 1, 1, 0, 0, 0, 0, day.Location())
		return t, t.AddDate(1, 0, 0), true
	}
	return time.Time{}, time.Time{}, false
}
