package memory

import (
	"regexp"
	"strings"
	"time"
)

var (
	reYesterday = regexp.MustCompile(`(?i)\byesterday\b`)
	reToday     = regexp.MustCompile(`(?i)\b(today|tonight|this morning|this afternoon|this evening)\b`)
	reTomorrow  = regexp.MustCompile(`(?i)\btomorrow\b`)
	reLastUnit  = regexp.MustCompile(`(?i)\blast (week|month|year|weekend)\b`)
	reNextUnit  = regexp.MustCompile(`(?i)\bnext (week|month|year|weekend)\b`)
	reLastDay   = regexp.MustCompile(`(?i)\b(last|this past|next|this coming) (monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b`)
	reAgo       = regexp.MustCompile(`(?i)\b(a|one|two|three|four|five|six|\d+) (day|week|month|year)s? ago\b`)
)

var weekdays = map[string]time.Weekday{"sunday": time.Sunday, "monday": time.Monday, "tuesday": time.Tuesday,
	"wednesday": time.Wednesday, "thursday": time.Thursday, "friday": time.Friday, "saturday": time.Saturday}

var numbers = map[string]int{"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}

// ResolveTime finds a relative time expression in s and resolves it against the message time
// to an absolute day ("yesterday" said on 8 May 2023 is 7 May 2023).
func ResolveTime(s string, at time.Time) (time.Time, bool) {
	day := time.Date(at.Year(), at.Month(), at.Day(), 0, 0, 0, 0, at.Location())
	switch {
	case reYesterday.MatchString(s):
		return day.AddDate(0, 0, -1), true
	case reTomorrow.MatchString(s):
		return day.AddDate(0, 0, 1), true
	case reToday.MatchString(s):
		return day, true
	}
	if g := reLastDay.FindStringSubmatch(s); g != nil {
		wd := weekdays[strings.ToLower(g[2])]
		diff := int(day.Weekday() - wd)
		if strings.HasPrefix(strings.ToLower(g[1]), "next") || strings.HasPrefix(strings.ToLower(g[1]), "this coming") {
			d := int(wd - day.Weekday())
			if d <= 0 {
				d += 7
			}
			return day.AddDate(0, 0, d), true
		}
		if diff <= 0 {
			diff += 7
		}
		return day.AddDate(0, 0, -diff), true
	}
	if g := reAgo.FindStringSubmatch(s); g != nil {
		n, ok := numbers[strings.ToLower(g[1])]
		if !ok {
			for _, c := range g[1] {
				n = n*10 + int(c-'0')
			}
		}
		switch strings.ToLower(g[2]) {
		case "day":
			return day.AddDate(0, 0, -n), true
		case "week":
			return day.AddDate(0, 0, -7*n), true
		case "month":
			return day.AddDate(0, -n, 0), true
		case "year":
			return day.AddDate(-n, 0, 0), true
		}
	}
	if g := reLastUnit.FindStringSubmatch(s); g != nil {
		return shift(day, strings.ToLower(g[1]), -1), true
	}
	if g := reNextUnit.FindStringSubmatch(s); g != nil {
		return shift(day, strings.ToLower(g[1]), 1), true
	}
	return time.Time{}, false
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
