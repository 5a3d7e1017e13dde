package memory_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/membus/membus/pkg/memory"
)

func TestHeuristicExtract(t *testing.T) {
	at := time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC) // a Monday
	cases := []struct {
		name      string
		text      string
		category  string
		attribute string
		polarity  int
		value     string
		textHas   string
	}{
		{"a name is a profile fact", "Hi, my name is Caroline Smith.", memory.Profile, "name", 1, "Caroline Smith", "Caroline"},
		{"where one lives is a profile fact", "I live in Boston with my sister.", memory.Profile, "lives in", 1, "Boston", "Caroline lives in Boston with their sister"},
		{"a move updates the same slot", "I moved to Denver last year.", memory.Profile, "lives in", 1, "Denver", "Denver"},
		{"likes are preferences", "I really love black coffee in the morning.", memory.Preference, "likes black coffee in the morning", 1, "black coffee in the morning", "Caroline loves black coffee"},
		{"dislikes have negative polarity", "I hate black coffee in the morning.", memory.Preference, "likes black coffee in the morning", -1, "black coffee in the morning", ""},
		{"a pet is an entity", "I have a dog named Max.", memory.Entity, "dog", 1, "Max", "Max"},
		{"a favourite is a preference", "My favourite book is Dune.", memory.Preference, "favorite book", 1, "Dune", "Caroline's favourite book"},
		{"my X is Y is an entity fact", "My car is a red Tesla.", memory.Entity, "car", 1, "a red Tesla", "Caroline's car"},
		{"decisions are kept", "We decided to use Postgres for the project.", memory.Decision, "", 1, "", "Postgres"},
		{"tasks are kept", "Remind me to renew the passport.", memory.Task, "", 1, "", "renew the passport"},
		{"first-person statements are facts", "I went hiking with friends at the lake.", memory.Fact, "", 1, "", "Caroline went hiking"},
	}
	h := memory.NewHeuristic()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := extractSaid(t, h, "Caroline", tc.text, at)
			if len(got) != 1 {
				t.Fatalf("got %d candidates %+v, want 1", len(got), got)
			}
			c := got[0]
			if c.Category != tc.category || c.Attribute != tc.attribute || c.Polarity != tc.polarity {
				t.Fatalf("got %s/%q/%d, want %s/%q/%d", c.Category, c.Attribute, c.Polarity, tc.category, tc.attribute, tc.polarity)
			}
			if tc.value != "" && c.Value != tc.value {
				t.Fatalf("value %q, want %q", c.Value, tc.value)
			}
			if tc.textHas != "" && !contains(c.Text, tc.textHas) {
				t.Fatalf("text %q lacks %q", c.Text, tc.textHas)
			}
			if len(c.Sources) != 1 || c.Sources[0] != "m1" {
				t.Fatalf("sources %v", c.Sources)
			}
		})
	}
}

func TestResolveTime(t *testing.T) {
	at := time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC) // Monday
	cases := []struct {
		text string
		want string
	}{
		{"I went there yesterday", "2023-05-07"},
		{"we go tomorrow", "2023-05-09"},
		{"last Saturday was fun", "2023-05-06"},
		{"next Friday I fly", "2023-05-12"},
		{"two weeks ago I ran", "2023-04-24"},
		{"next month we move", "2023-06-01"},
		{"last year I started", "2022-01-01"},
		{"the day before yesterday we met", "2023-05-06"},
		{"I ran a marathon on May 3rd", "2023-05-03"},
		{"I'm flying out on May 3rd", "2024-05-03"},
		{"we went there on the 2nd of April", "2023-04-02"},
		{"she was born on March 4, 1990", "1990-03-04"},
		{"I graduated in 2019", "2019-01-01"},
		{"in two weeks I start", "2023-05-22"},
		{"a couple of days ago", "2023-05-06"},
		{"I saw him on Friday", "2023-05-05"},
		{"I will see him on Friday", "2023-05-12"},
		{"this weekend we hike", "2023-05-13"},
		{"we moved there in March", "2023-03-01"},
		{"the deadline is 2023-07-01", "2023-07-01"},
		{"I joined a choir last Tues.", "2023-05-02"},
		{"we meet next Thurs for lunch", "2023-05-11"},
		{"this past Sat we hiked", "2023-05-06"},
	}
	for _, tc := range cases {
		got, ok := memory.ResolveTime(tc.text, at)
		if !ok || got.Format("2006-01-02") != tc.want {
			t.Errorf("%q: got %v %v, want %s", tc.text, got, ok, tc.want)
		}
	}
	for _, none := range []string{"no time here", "this may work", "I may go", "I sat on the porch", "we wed in the sun"} {
		if got, ok := memory.ResolveTime(none, at); ok {
			t.Errorf("%q: resolved %v in a sentence without a time", none, got)
		}
	}
}

func TestResolveSpeaker(t *testing.T) {
	cases := []struct{ in, want string }{
		{"I live in Boston with my sister.", "Caroline lives in Boston with Caroline's sister."},
		{"I usually go to the gym.", "Caroline usually goes to the gym."},
		{"I don't like coffee.", "Caroline doesn't like coffee."},
		{"I have a dog and I watch him daily.", "Caroline has a dog and Caroline watches him daily."},
		{"I moved to Denver.", "Caroline moved to Denver."},
		{"I'm tired, I've slept badly, I'll rest.", "Caroline is tired, Caroline has slept badly, Caroline will rest."},
		{"i study French and it helps me.", "Caroline studies French and it helps Caroline."},
		{"I take some me-time and it helps me.", "Caroline takes some me-time and it helps Caroline."},
		{"When I look after myself, I come home happier and never give up.", "When Caroline looks after Caroline, Caroline comes home happier and never give up."},
	}
	for _, tc := range cases {
		if got := memory.ResolveSpeaker(tc.in, "Caroline"); got != tc.want {
			t.Errorf("ResolveSpeaker(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestIDs(t *testing.T) {
	c := memory.Candidate{Scope: "user", Category: memory.Profile, Subject: "Caroline", Attribute: "lives in", Polarity: 1, Value: "Boston"}
	a := memory.ID("acme", "u1", "", c)
	c.Value = " boston. "
	if b := memory.ID("acme", "u1", "", c); a != b {
		t.Fatal("normalised values must give the same id")
	}
	if memory.ID("other", "u1", "", c) == a {
		t.Fatal("accounts must not share ids")
	}
	ev := memory.Candidate{Scope: "user", Category: memory.Event, Value: "gym"}
	d1, d2 := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2023, 1, 8, 0, 0, 0, 0, time.UTC)
	ev.EventTime = &d1
	x := memory.ID("acme", "u1", "", ev)
	ev.EventTime = &d2
	if memory.ID("acme", "u1", "", ev) == x {
		t.Fatal("recurring events on different days must stay distinct")
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && (func() bool {
		for i := 0; i+len(sub) <= len(s); i++ {
			if s[i:i+len(sub)] == sub {
				return true
			}
		}
		return false
	})())
}

func TestSentences(t *testing.T) {
	cases := []struct {
		name, text string
		want       []string
	}{
		{"full stops, a question and a line break", "I moved. Did you?\nYes!", []string{"I moved.", "Did you?", "Yes!"}},
		{"an abbreviation and a version stay whole", "Dr. Lee uses Node.js 3.5 now.", []string{"Dr. Lee uses Node.js 3.5 now."}},
		{"a closing quote stays with its sentence", `I'm working on one called "Finding Home." It's a script.`, []string{`I'm working on one called "Finding Home."`, "It's a script."}},
		{"a quoted sentence ends with its quote", `She said: "Turn on the light!" That's how I keep hope.`, []string{`She said: "Turn on the light!"`, "That's how I keep hope."}},
		{"a curly closing quote too", "We called it \u201cHome.\u201d It stuck.", []string{"We called it \u201cHome.\u201d", "It stuck."}},
		{"a closing bracket stays with its sentence", "We met at noon (it rained.) Then we left.", []string{"We met at noon (it rained.)", "Then we left."}},
		{"initials are no sentence end", "There's a quote by J.K. Rowling that I like. It's short.", []string{"There's a quote by J.K. Rowling that I like.", "It's short."}},
		{"a country's initials are none either", "We flew to the U.S. last week.", []string{"We flew to the U.S. last week."}},
		{"a single capital is a sentence's last word", "I take vitamin C. It helps.", []string{"I take vitamin C.", "It helps."}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := memory.Sentences(tc.text); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Sentences(%q) = %q, want %q", tc.text, got, tc.want)
			}
		})
	}
}

// A reply's opening word ("Nope", "Sorry") corrects nothing when the statement after it fills
// no slot, and a sentence that leaves its object to the one before ("I love to") states
// nothing: both are read like any other sentence.
func TestRepliesAndEllipses(t *testing.T) {
	at := time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC)
	cases := []struct {
		name, text string
		want       []string // the candidates' texts
	}{
		{"a reply's no before a statement", "Nope, but it's my first time going.", []string{"It is Tim's first time going."}},
		{"an apology to the listener is no memory", "Sorry I didn't get back to you sooner...", nil},
		{"a love of nothing named", "Yeah, I love to.", nil},
		{"a hope that names no hope", "I hope so, Gina.", nil},
		{"a preposition that ends a clause is no ellipsis", "It's important to me that people have someone to talk to, and I want to help.", []string{"Tim thinks it is important to them that people have someone to talk to, and they want to help."}},
		{"a love of doing something stays", "I love to bake bread on Sundays.", []string{"Tim loves to bake bread on Sundays."}},
		{"a correction that fills a slot is still one", "Actually, I moved to Denver.", []string{"Tim moved to Denver."}},
		{"a correction in the same message replaces the slot said before it", "I live in Boston. Actually, I moved to Denver.", []string{"Tim moved to Denver."}},
	}
	h := memory.NewHeuristic()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var texts []string
			for _, c := range extractSaid(t, h, "Tim", tc.text, at) {
				texts = append(texts, c.Text)
			}
			if !reflect.DeepEqual(texts, tc.want) {
				t.Errorf("Extract(%q) = %q, want %q", tc.text, texts, tc.want)
			}
		})
	}
}

// extractSaid is what the heuristic extractor takes from one user message, m1.
func extractSaid(t *testing.T, h *memory.Heuristic, name, text string, at time.Time) []memory.Candidate {
	t.Helper()
	got, err := h.Extract(context.Background(), []memory.Message{{ID: "m1", Role: "user", Name: name, Text: text, CreatedAt: at}})
	if err != nil {
		t.Fatal(err)
	}
	return got
}
