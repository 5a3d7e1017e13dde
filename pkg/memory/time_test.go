package memory

import (
	"testing"
	"time"
)

func TestPeriod(t *testing.T) {
	now := time.Date(2023, 8, 20, 9, 0, 0, 0, time.UTC)
	cases := []struct {
		name, query string
		from, to    string // "" = no period
	}{
		{"day month, year", "What exciting news did Maria share on 16 June, 2023?", "2023-06-16", "2023-06-17"},
		{"month day, year", "What painting did Melanie show to Caroline on October 13, 2023?", "2023-10-13", "2023-10-14"},
		{"ordinal day", "What book did Tim just finish reading on 8th December, 2023?", "2023-12-08", "2023-12-09"},
		{"a day without a year is the latest one not after now", "What did she say on August 3?", "2023-08-03", "2023-08-04"},
		{"a later day without a year is last year's", "What did she say on 3 September?", "2022-09-03", "2022-09-04"},
		{"month and year", "What filling did Joanna use in the cake she made in May 2022?", "2022-05-01", "2022-06-01"},
		{"a month without a year that has begun is this year's", "When did Melanie go camping in August?", "2023-08-01", "2023-09-01"},
		{"a month without a year still to come is last year's", "When did Melanie go camping in October?", "2022-10-01", "2022-11-01"},
		{"year", "How many times has Melanie gone to the beach in 2023?", "2023-01-01", "2024-01-01"},
		{"no date", "What did Caroline research?", "", ""},
		{"relative times are not a period", "What did Caroline do last week?", "", ""},
		{"may the verb is not a month", "What may Caroline research next?", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			from, to, ok := Period(c.query, now)
			if c.from == "" {
				if ok {
					t.Fatalf("Period(%q) = %s–%s, want none", c.query, from, to)
				}
				return
			}
			if !ok || from.Format(time.DateOnly) != c.from || to.Format(time.DateOnly) != c.to {
				t.Fatalf("Period(%q) = %s–%s (%v), want %s–%s", c.query, from.Format(time.DateOnly), to.Format(time.DateOnly), ok, c.from, c.to)
			}
		})
	}
}
