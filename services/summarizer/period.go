package summarizer

import (
	"errors"
	"fmt"
	"time"
)

// Periods of a digest.
const (
	PeriodDay   = "day"
	PeriodWeek  = "week"
	PeriodMonth = "month"
)

// ErrPeriod is returned for a period that is not day, week or month.
var ErrPeriod = errors.New("period must be day, week or month")

// Span is one bucket of a period: its name (2026-11-30, 2026-W49, 2026-11) and [Start, End)
// in the schedule's time zone.
type Span struct {
	Period string
	Bucket string
	Start  time.Time
	End    time.Time
}

// BucketOf returns the bucket of period that contains t, in loc. Weeks are ISO weeks (Monday
// to Sunday, named by their ISO year and number).
func BucketOf(period string, t time.Time, loc *time.Location) (Span, error) {
	t = t.In(loc)
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, loc)
	switch period {
	case PeriodDay:
		return Span{Period: period, Bucket: day.Format(time.DateOnly), Start: day, End: day.AddDate(0, 0, 1)}, nil
	case PeriodWeek:
		start := day.AddDate(0, 0, -((int(day.Weekday()) + 6) % 7))
		y, w := start.ISOWeek()
		return Span{Period: period, Bucket: fmt.Sprintf("%04d-W%02d", y, w), Start: start, End: start.AddDate(0, 0, 7)}, nil
	case PeriodMonth:
		start := time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, loc)
		return Span{Period: period, Bucket: start.Format("2006-01"), Start: start, End: start.AddDate(0, 1, 0)}, nil
	}
	return Span{}, fmt.Errorf("%w: %q", ErrPeriod, period)
}

// prev is the bucket before s.
func (s Span) prev() Span {
	p, _ := BucketOf(s.Period, s.Start.Add(-time.Nanosecond), s.Start.Location())
	return p
}

// parseClock reads "HH:MM" as an offset into a day.
func parseClock(v string) (time.Duration, error) {
	t, err := time.Parse("15:04", v)
	if err != nil {
		return 0, fmt.Errorf("%q is not a time of day HH:MM", v)
	}
	return time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute, nil
}

// dueAt is when a bucket's job runs: at the given time of day on the day its period ends
// (the day after a day, the Monday after a week, the 1st after a month), wall-clock in loc.
func dueAt(s Span, at time.Duration) time.Time {
	e := s.End
	return time.Date(e.Year(), e.Month(), e.Day(), int(at/time.Hour), int(at%time.Hour/time.Minute), 0, 0, e.Location())
}
