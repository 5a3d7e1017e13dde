package extract

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/lock"
	"github.com/membus/membus/pkg/memory"
	"github.com/membus/membus/pkg/metrics"
	"github.com/membus/membus/pkg/store"
)

func TestLevenshteinSimilarity(t *testing.T) {
	cases := []struct {
		a, b string
		want float64
	}{
		{"kitten", "sitting", 1 - 3.0/7},
		{"same text", "same text", 1},
		{"", "", 1},
		{"short", "a much longer text than short", 0}, // lengths alone rule it out
	}
	for _, c := range cases {
		if got := levenshteinSimilarity(c.a, c.b); got < c.want-1e-9 || got > c.want+1e-9 {
			t.Errorf("levenshteinSimilarity(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func mem(cat, subject, attr string, pol int, value, text string) store.Memory {
	c := memory.Candidate{Scope: "user", Category: cat, Subject: subject, Attribute: attr, Polarity: pol, Value: value, Text: text}
	return store.Memory{ID: memory.ID(acct, "alice", "", c), Scope: "user", Category: cat, Subject: subject, Attribute: attr,
		Polarity: pol, Value: value, Text: text, ContentHash: memory.ContentHash(text)}
}

// onDay dates an event memory.
func onDay(m store.Memory, day string) store.Memory {
	t, err := time.Parse("2006-01-02", day)
	if err != nil {
		panic(err)
	}
	m.EventTime = &t
	m.ID = memory.ID(acct, "alice", "", memory.Candidate{Scope: m.Scope, Category: m.Category, Subject: m.Subject,
		Attribute: m.Attribute, Polarity: m.Polarity, Value: m.Value, Text: m.Text, EventTime: &t})
	return m
}

func TestConflictAndDedupReasons(t *testing.T) {
	cases := []struct {
		name       string
		old, new   store.Memory
		conflict   string // reason, "" for none
		duplicate  string // reason, "" for none (only asked when not a conflict)
		similarity bool   // the texts are near-duplicates by Levenshtein: the trap conflicts must escape
	}{
		{"Boston → Austin is a conflict, not a near-duplicate",
			mem(memory.Profile, "Caroline", "lives in", 1, "Boston", "Caroline lives in Boston."),
			mem(memory.Profile, "Caroline", "lives in", 1, "Austin", "Caroline lives in Austin."), reasonValueChanged, "", true},
		{"dog Max → dog Rex is a conflict",
			mem(memory.Entity, "Caroline", "dog", 1, "Max", "Caroline has a dog named Max."),
			mem(memory.Entity, "Caroline", "dog", 1, "Rex", "Caroline has a dog named Rex."), reasonValueChanged, "", true},
		{"likes coffee → doesn't like coffee is a conflict",
			mem(memory.Preference, "Caroline", "likes black coffee in the morning", 1, "black coffee in the morning", "Caroline likes black coffee in the morning."),
			mem(memory.Preference, "Caroline", "likes black coffee in the morning", -1, "black coffee in the morning", "Caroline dislikes black coffee in the morning."), reasonPolarityFlipped, "", true},
		{"likes cats and likes bats are different slots, however close the words",
			mem(memory.Preference, "Caroline", "likes cats", 1, "cats", "Caroline really likes cats."),
			mem(memory.Preference, "Caroline", "likes bats", 1, "bats", "Caroline really likes bats."), "", "", true},
		{"the same slot and value is the same memory",
			mem(memory.Profile, "Caroline", "lives in", 1, "Boston", "Caroline lives in Boston."),
			mem(memory.Profile, "Caroline", "lives in", 1, "Boston", "Caroline currently lives in Boston."), "", reasonSameID, false},
		{"exact text",
			mem(memory.Fact, "Caroline", "", 1, "a", "Caroline's team ships on Fridays."),
			mem(memory.Fact, "Caroline", "", 1, "b", "caroline's team ships on fridays!"), "", reasonExact, false},
		{"containment",
			mem(memory.Fact, "Caroline", "", 1, "a", "Caroline's team ships the billing release."),
			mem(memory.Fact, "Caroline", "", 1, "b", "Caroline's team ships the billing release every Friday."), "", reasonContainment, false},
		{"the same words in another order are the same fact",
			mem(memory.Fact, "Caroline", "", 1, "a", "Caroline's team ships the billing release every Friday afternoon."),
			mem(memory.Fact, "Caroline", "", 1, "b", "Every Friday afternoon Caroline's team ships the billing release."), "", reasonSameFact, false},
		{"token Jaccard",
			mem(memory.Fact, "Caroline", "", 1, "a", "Caroline's team ships the billing release every Friday afternoon."),
			mem(memory.Fact, "Caroline", "", 1, "b", "Every Friday afternoon Caroline's team usually ships the billing release."), "", reasonJaccard, false},
		{"the same slot and value in another category and order is the same fact",
			mem(memory.Preference, "Caroline", "favorite color", 1, "blue", "Caroline's favorite color is blue."),
			mem(memory.Fact, "Caroline", "", 1, "Blue is my favorite color", "Blue is Caroline's favorite color!"), "", reasonSameFact, false},
		{"British and American spellings of one slot and value are the same fact",
			mem(memory.Preference, "Caroline", "favorite color", 1, "blue", "Caroline's favorite color is blue."),
			mem(memory.Preference, "Caroline", "favourite colour", 1, "Blue", "Just so you know, Caroline's favourite colour is Blue."), "", reasonSameFact, false},
		{"a new value in the other spelling of the slot is a conflict",
			mem(memory.Preference, "Caroline", "favorite color", 1, "blue", "Caroline's favorite color is blue."),
			mem(memory.Entity, "Caroline", "favourite colour", 1, "Green", "Green is Caroline's favourite colour."), reasonValueChanged, "", false},
		{"a substituted word is a changed fact, not a near-duplicate",
			mem(memory.Fact, "Caroline", "", 1, "a", "Caroline's team ships the billing release every Friday afternoon."),
			mem(memory.Fact, "Caroline", "", 1, "b", "Caroline's team ships the billing release every Monday afternoon."), "", "", true},
		{"a slot-less text is no near-duplicate of a slot it does not state",
			mem(memory.Preference, "Caroline", "favorite color", 1, "blue", "Caroline's favorite color is blue."),
			mem(memory.Preference, "Caroline", "", 1, "a", "Caroline's sister's favorite color is blue."), "", "", false},
		{"one event on two days is two memories",
			onDay(mem(memory.Event, "Caroline", "", 1, "a", "Caroline went hiking with her dog."), "2025-03-01"),
			onDay(mem(memory.Event, "Caroline", "", 1, "a", "Caroline went hiking with her dog."), "2025-03-08"), "", "", true},
		{"Levenshtein catches typos Jaccard misses",
			mem(memory.Fact, "Caroline", "", 1, "a", "Caroline thinks her colleage recomended the new scheduler."),
			mem(memory.Fact, "Caroline", "", 1, "b", "Caroline thinks her colleague recommended the new scheduler."), "", reasonLevenshtein, true},
		{"unrelated facts stay apart",
			mem(memory.Fact, "Caroline", "", 1, "a", "Caroline's team ships on Fridays."),
			mem(memory.Fact, "Caroline", "", 1, "b", "Caroline went hiking at the lake."), "", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sim := levenshteinSimilarity(memory.Normalize(tc.old.Text), memory.Normalize(tc.new.Text))
			if tc.similarity && sim < levenshteinDuplicate {
				t.Fatalf("texts are only %.2f similar: the case does not test what it claims", sim)
			}
			_, reason, ok := conflicting([]store.Memory{tc.old}, tc.new)
			if ok != (tc.conflict != "") || reason != tc.conflict {
				t.Fatalf("conflict = %v %q, want %q", ok, reason, tc.conflict)
			}
			if ok {
				return
			}
			_, reason, ok = duplicate([]store.Memory{tc.old}, tc.new, 0)
			if ok != (tc.duplicate != "") || reason != tc.duplicate {
				t.Fatalf("duplicate = %v %q, want %q", ok, reason, tc.duplicate)
			}
		})
	}
}

// tellWith says one user message in a session and commits it with svc.
func (e *env) tellWith(svc *Service, session, id, text string) {
	e.t.Helper()
	e.say("alice", session, text)
	if err := svc.Commit(e.ctx, e.request("alice", session, contract.CommitSync, id)); err != nil {
		e.t.Fatalf("commit %s: %v", id, err)
	}
}

func decisions(m *metrics.Metrics) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m.Snapshot(time.Now()).Counters {
		if strings.HasPrefix(k, "membus_extract_memory_decisions_total{") {
			out[strings.TrimPrefix(k, "membus_extract_memory_decisions_total")] = v
		}
	}
	return out
}

func TestSimilarChangesStayConflicts(t *testing.T) {
	e := newEnv(t)
	svc, m := e.replica("a", lock.NewLocal(), nil)
	steps := []struct{ first, then, category string }{
		{"I live in Boston.", "I live in Austin.", memory.Profile},
		{"I have a dog named Max.", "I have a dog named Rex.", memory.Entity},
		{"I like black coffee in the morning.", "I dislike black coffee in the morning.", memory.Preference},
	}
	for i, st := range steps {
		s := fmt.Sprintf("s%d", i)
		e.tellWith(svc, s, s+"-r1", st.first)
		e.tellWith(svc, s, s+"-r2", st.then)
		ms, err := e.st.Memories(e.ctx, store.MemoryFilter{AccountID: acct, UserID: "alice", Category: st.category})
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) != 2 {
			t.Fatalf("%q → %q: %d %s rows, want 2 (old superseded, new active)", st.first, st.then, len(ms), st.category)
		}
		var old, cur store.Memory
		for _, mm := range ms {
			if mm.Active() {
				cur = mm
			} else {
				old = mm
			}
		}
		if cur.ID == "" || old.SupersededBy != cur.ID || e.inIndex("alice", old.ID) || !e.inIndex("alice", cur.ID) {
			t.Fatalf("%q → %q: old %+v, new %+v; want the old superseded by the new and out of the index", st.first, st.then, old, cur)
		}
	}
	got := decisions(m)
	if got[`{decision="superseded",reason="value_changed"}`] != 2 || got[`{decision="superseded",reason="polarity_flipped"}`] != 1 {
		t.Fatalf("decisions %v, want 2 value_changed and 1 polarity_flipped supersessions", got)
	}
	for k := range got {
		if strings.Contains(k, `decision="merged"`) {
			t.Fatalf("a changed fact was merged as a duplicate: %v", got)
		}
	}
}

func TestSameFactThreeWaysStoredOnce(t *testing.T) {
	cases := []struct {
		name   string
		says   []string
		reason string // the dedup reason the second and third statements are merged by
	}{
		{"one slot said three ways", []string{"I live in Boston.", "I currently live in Boston.", "Actually, I live in Boston now."}, reasonSameID},
		{"one fact said three ways", []string{
			"I think my team ships the billing release every friday afternoon.",
			"My team ships the billing release every Friday afternoon.",
			"I think my team ships the billing release every friday afternoon!!"}, ""},
		{"one fact with typos", []string{
			"I think my colleague recommended the new scheduler.",
			"I think my colleage recomended the new scheduler.",
			"I think my coleague recommended the new schedular."}, reasonLevenshtein},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			svc, m := e.replica("a", lock.NewLocal(), nil)
			for i, text := range tc.says {
				s := fmt.Sprintf("s%d", i+1)
				e.tellWith(svc, s, s+"-r", text)
			}
			all, err := e.st.Memories(e.ctx, store.MemoryFilter{AccountID: acct, UserID: "alice"})
			if err != nil {
				t.Fatal(err)
			}
			if len(all) != 1 || !all[0].Active() {
				t.Fatalf("%d memories %+v, want one active", len(all), all)
			}
			var srcs []string
			for _, s := range all[0].Sources {
				srcs = append(srcs, s.SessionID+"/"+s.MessageID)
			}
			sort.Strings(srcs)
			if strings.Join(srcs, ",") != "s1/s1-m01,s2/s2-m01,s3/s3-m01" {
				t.Fatalf("sources %v, want all three statements", srcs)
			}
			got := decisions(m)
			merged := 0.0
			for k, v := range got {
				if strings.Contains(k, `decision="merged"`) {
					merged += v
				}
			}
			if merged != 2 || (tc.reason != "" && got[`{decision="merged",reason="`+tc.reason+`"}`] == 0) {
				t.Fatalf("decisions %v, want two merges (by %s)", got, tc.reason)
			}
		})
	}
}

func TestReturningFactReactivates(t *testing.T) {
	e := newEnv(t)
	svc, m := e.replica("a", lock.NewLocal(), nil)
	for i, city := range []string{"Boston", "Denver", "Boston"} {
		e.tellWith(svc, "s1", fmt.Sprintf("r%d", i), "I live in "+city+".")
	}
	ms := e.memories("alice")
	if len(ms) != 2 || !ms["Boston"].Active() || ms["Denver"].Active() || ms["Denver"].SupersededBy != ms["Boston"].ID {
		t.Fatalf("after Boston → Denver → Boston: %+v, want Boston active (its first row) and Denver superseded by it", ms)
	}
	if !e.inIndex("alice", ms["Boston"].ID) || e.inIndex("alice", ms["Denver"].ID) {
		t.Fatal("the index does not hold exactly Boston")
	}
	if got := decisions(m)[`{decision="superseded",reason="value_changed"}`]; got != 2 {
		t.Fatalf("%v value_changed supersessions, want 2", got)
	}
}
