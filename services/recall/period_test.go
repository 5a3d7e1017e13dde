package recall

import (
	"testing"
	"time"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/store"
)

func TestPeriodMatcher(t *testing.T) {
	now := time.Date(2023, 8, 20, 9, 0, 0, 0, time.UTC)
	june16 := time.Date(2023, 6, 16, 14, 0, 3, 0, time.UTC)
	june17 := june16.AddDate(0, 0, 1)
	said := candidate{id: "a1", kind: contract.KindArchive, msg: archiveRef{session: "s1", messageID: "m1"}, createdAt: june16,
		sources: []store.Source{{SessionID: "s1", MessageID: "m1"}}}
	saidLater := candidate{id: "a2", kind: contract.KindArchive, msg: archiveRef{session: "s1", messageID: "m2"}, createdAt: june17,
		sources: []store.Source{{SessionID: "s1", MessageID: "m2"}}}
	cands := []candidate{said, saidLater}
	cases := []struct {
		name  string
		query string
		c     candidate
		want  bool
	}{
		{"archive message said that day", "What did Maria share on 16 June, 2023?", said, true},
		{"archive message said the next day", "What did Maria share on 16 June, 2023?", saidLater, false},
		{"archive message said that month", "What did Maria share in June 2023?", saidLater, true},
		{"memory sourced at a message said then", "What did Maria share on 16 June, 2023?",
			candidate{kind: contract.KindMemory, createdAt: now, sources: []store.Source{{SessionID: "s1", MessageID: "m1"}}}, true},
		{"memory whose event happened then", "What did Maria do in June 2023?",
			candidate{kind: contract.KindMemory, createdAt: now, eventTime: &june17}, true},
		{"memory neither happened nor said then", "What did Maria share on 16 June, 2023?",
			candidate{kind: contract.KindMemory, createdAt: june16, sources: []store.Source{{SessionID: "s1", MessageID: "m2"}}}, false},
		{"digest never", "What did Maria do in June 2023?", candidate{kind: contract.KindDigest, eventTime: &june16}, false},
		{"query without a date matches nothing", "What did Maria share?", said, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := periodMatcher(c.query, now, cands)(&c.c); got != c.want {
				t.Fatalf("in period = %v, want %v", got, c.want)
			}
		})
	}
}
