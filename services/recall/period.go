package recall

import (
	"time"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/memory"
	"github.com/membus/membus/pkg/store"
)

// periodMatcher reports, for a query that names a date ("on 3 June, 2023", "in May 2022"),
// whether a candidate was said or happened in the span it names: an archive message by its
// time, a memory by its event time or by the time of a message it is sourced at among the
// archive candidates. Without a date in the query it matches nothing.
func periodMatcher(query string, now time.Time, cands []candidate) func(*candidate) bool {
	from, to, ok := memory.Period(query, now)
	if !ok {
		return func(*candidate) bool { return false }
	}
	in := func(t time.Time) bool { return !t.IsZero() && !t.Before(from) && t.Before(to) }
	said := map[store.Source]time.Time{}
	for i := range cands {
		if c := &cands[i]; c.kind == contract.KindArchive {
			said[store.Source{SessionID: c.msg.session, MessageID: c.msg.messageID}] = c.createdAt
		}
	}
	return func(c *candidate) bool {
		switch {
		case c.kind == contract.KindArchive:
			return in(c.createdAt)
		case c.kind == contract.KindDigest:
			return false
		case c.eventTime != nil && in(*c.eventTime):
			return true
		}
		for _, src := range c.sources {
			if in(said[src]) {
				return true
			}
		}
		return false
	}
}
