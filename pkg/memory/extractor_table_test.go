package memory_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/membus/membus/pkg/memory"
)

// want is a memory the heuristic extractor must produce for a snippet. Empty fields are not
// checked; value is compared normalised, has case-insensitively against the text.
type want struct {
	cat   string
	attr  string
	value string
	pol   int
	has   string
	day   string // event time, 2006-01-02
	scope string
}

type snippet struct {
	name string
	msgs []memory.Message
	want []want // nil: the snippet states nothing worth remembering
}

// tableAt is when every snippet's first message was said: Monday 8 May 2023.
var tableAt = time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC)

func u(text string) memory.Message {
	return memory.Message{Role: "user", Name: "Caroline", Text: text}
}
func anon(text string) memory.Message { return memory.Message{Role: "user", Text: text} }
func a(text string) memory.Message    { return memory.Message{Role: "assistant", Text: text} }

func conv(msgs ...memory.Message) []memory.Message { return msgs }

// The acceptance table of the heuristic extractor (issue 4): hand-written snippets covering
// every category, negations, corrections and relative dates.
var table = []snippet{
	// Profile.
	{"name said by an unnamed user", conv(anon("Hi! My name is Caroline Smith.")), []want{{cat: memory.Profile, attr: "name", value: "Caroline Smith"}}},
	{"where one lives", conv(u("I live in Boston.")), []want{{cat: memory.Profile, attr: "lives in", value: "Boston", pol: 1, has: "Caroline lives in Boston"}}},
	{"a move last year", conv(u("I moved to Denver last year.")), []want{{cat: memory.Profile, attr: "lives in", value: "Denver", day: "2022-01-01"}}},
	{"origin", conv(u("I'm originally from Lisbon, Portugal.")), []want{{cat: memory.Profile, attr: "from", value: "Lisbon"}}},
	{"employer", conv(u("I work at Stripe as a backend engineer.")), []want{{cat: memory.Profile, attr: "works at", value: "Stripe"}}},
	{"job", conv(u("I'm a nurse at the children's hospital.")), []want{{cat: memory.Profile, attr: "job", value: "nurse"}}},
	{"age", conv(u("I turned 34 last month.")), []want{{cat: memory.Profile, attr: "age", value: "34"}}},
	{"diet", conv(u("I'm vegetarian, so no meat for me please.")), []want{{cat: memory.Profile, attr: "diet", value: "vegetarian", pol: 1}}},
	{"allergy", conv(u("I'm allergic to peanuts.")), []want{{cat: memory.Profile, attr: "allergic to peanuts", value: "peanuts"}}},
	{"languages", conv(u("I speak Spanish and French.")), []want{{cat: memory.Profile, value: "Spanish and French"}}},
	{"name learned from the conversation", conv(anon("My name is Dana."), anon("I live in Seattle.")), []want{
		{cat: memory.Profile, attr: "name", value: "Dana"},
		{cat: memory.Profile, attr: "lives in", value: "Seattle", has: "Dana lives in Seattle"}}},

	// Preferences and habits.
	{"love", conv(u("I really love black coffee in the morning.")), []want{{cat: memory.Preference, value: "black coffee in the morning", pol: 1, has: "Caroline loves black coffee"}}},
	{"hate", conv(u("I hate cilantro.")), []want{{cat: memory.Preference, attr: "likes cilantro", pol: -1}}},
	{"can't stand", conv(u("I can't stand loud restaurants.")), []want{{cat: memory.Preference, value: "loud restaurants", pol: -1}}},
	{"prefer X over Y", conv(u("I prefer tea over coffee.")), []want{{cat: memory.Preference, attr: "likes tea", pol: 1}}},
	{"value first: a favourite", conv(u("Blue is definitely my favourite colour!")), []want{{cat: memory.Preference, attr: "favorite colour", value: "Blue", pol: 1, has: "Blue is Caroline's favourite colour"}}},
	{"value first: a hometown", conv(u("Lisbon is my hometown.")), []want{{cat: memory.Profile, attr: "from", value: "Lisbon"}}},
	{"a day first is no value: an event", conv(u("Today is my birthday!")), []want{{cat: memory.Event, day: "2023-05-08"}}},
	{"fan of", conv(u("I'm a huge fan of jazz.")), []want{{cat: memory.Preference, value: "jazz", pol: 1}}},
	{"negation: not anymore", conv(u("I don't like sushi anymore.")), []want{{cat: memory.Preference, attr: "likes sushi", value: "sushi", pol: -1}}},
	{"negation: no longer", conv(u("I no longer enjoy running.")), []want{{cat: memory.Preference, value: "running", pol: -1}}},
	{"favourite", conv(u("My favourite movie is Spirited Away.")), []want{{cat: memory.Preference, attr: "favorite movie", value: "Spirited Away"}}},
	{"habit: usually", conv(u("I usually go to the gym before work.")), []want{{cat: memory.Preference, value: "go to the gym before work", pol: 1, has: "Caroline usually goes"}}},
	{"habit: every morning", conv(u("Every morning I drink a glass of water.")), []want{{cat: memory.Preference, value: "drink a glass of water", pol: 1}}},
	{"habit: never", conv(u("I never drink alcohol.")), []want{{cat: memory.Preference, value: "drink alcohol", pol: -1}}},
	{"habit: quit", conv(u("I quit smoking two years ago.")), []want{{cat: memory.Preference, value: "smoking", pol: -1}}},

	// Entities with relations.
	{"pet named", conv(u("I have a dog named Max.")), []want{{cat: memory.Entity, attr: "dog", value: "Max"}}},
	{"pet in passing, dated", conv(u("I took my cat Luna to the vet yesterday.")), []want{
		{cat: memory.Entity, attr: "cat", value: "Luna"},
		{cat: memory.Event, has: "Caroline took their cat Luna to the vet", day: "2023-05-07"}}},
	{"sister by name", conv(u("My sister Anna lives in Paris.")), []want{
		{cat: memory.Entity, attr: "sister anna", value: "Anna"},
		{cat: memory.Fact, has: "Anna lives in Paris"}}},
	{"manager is", conv(u("My manager is Bob.")), []want{{cat: memory.Entity, attr: "manager", value: "Bob"}}},
	{"X is my best friend", conv(u("Anna is my best friend.")), []want{{cat: memory.Entity, attr: "best friend", value: "Anna"}}},
	{"two relations in an event", conv(u("I went hiking with my brother Tom and my friend Jess last Saturday.")), []want{
		{cat: memory.Event, has: "hiking", day: "2023-05-06"},
		{cat: memory.Entity, attr: "brother tom", value: "Tom"},
		{cat: memory.Entity, attr: "friend jess", value: "Jess"}}},
	{"colleague at an event", conv(u("I met my colleague Priya for lunch on Friday.")), []want{
		{cat: memory.Event, has: "lunch", day: "2023-05-05"},
		{cat: memory.Entity, attr: "colleague priya", value: "Priya"}}},
	{"project", conv(u("I'm working on a side project called Lumen.")), []want{{cat: memory.Entity, attr: "project lumen", value: "Lumen"}}},
	{"our app", conv(u("We're building an app called Tidy.")), []want{{cat: memory.Entity, value: "Tidy"}}},

	// Events with absolute dates.
	{"flight on a date", conv(u("I'm flying to Tokyo on June 10th.")), []want{{cat: memory.Event, has: "Tokyo", day: "2023-06-10"}}},
	{"past date", conv(u("I ran my first marathon on April 2nd.")), []want{{cat: memory.Event, has: "marathon", day: "2023-04-02"}}},
	{"a year", conv(u("I graduated from MIT in 2019.")), []want{{cat: memory.Event, has: "MIT", day: "2019-01-01"}}},
	{"next month", conv(u("We're moving our office next month.")), []want{{cat: memory.Event, has: "office", day: "2023-06-01"}}},
	{"last week", conv(u("I started a new pottery class last week.")), []want{{cat: memory.Event, has: "pottery", day: "2023-05-01"}}},
	{"the day before yesterday", conv(u("My daughter's recital was the day before yesterday.")), []want{{cat: memory.Event, has: "recital", day: "2023-05-06"}}},
	{"next Friday", conv(u("My parents are visiting next Friday.")), []want{{cat: memory.Event, has: "parents", day: "2023-05-12"}}},
	{"in two weeks", conv(u("I have a job interview in two weeks.")), []want{{cat: memory.Event, has: "interview", day: "2023-05-22"}}},

	// Decisions and tasks.
	{"we decided", conv(u("We decided to use Postgres for the new service.")), []want{{cat: memory.Decision, has: "Postgres"}}},
	{"I've decided", conv(u("I've decided to sell my car.")), []want{{cat: memory.Decision, has: "sell"}}},
	{"remind me", conv(u("Remind me to renew my passport.")), []want{{cat: memory.Task, value: "renew my passport"}}},
	{"need to, tomorrow", conv(u("I need to call the plumber tomorrow.")), []want{{cat: memory.Task, value: "call the plumber", day: "2023-05-09"}}},
	{"a goal", conv(u("I want to learn Italian.")), []want{{cat: memory.Task, value: "learn Italian"}}},

	// Facts.
	{"a first-person fact", conv(u("My team ships the billing release every Friday.")), []want{{cat: memory.Fact, has: "Caroline's team ships"}}},

	// Negations and corrections.
	{"no longer lives there", conv(u("I don't live in Chicago anymore.")), []want{{cat: memory.Profile, attr: "lives in", value: "Chicago", pol: -1}}},
	{"correction: it's Y, not X", conv(u("I have a dog named Max."), u("Actually, it's Rex, not Max.")), []want{{cat: memory.Entity, attr: "dog", value: "Rex", has: "Rex"}}},
	{"correction: I meant Y", conv(u("I live in Boston."), u("Sorry, I meant Austin.")), []want{{cat: memory.Profile, attr: "lives in", value: "Austin"}}},
	{"correction inside the sentence", conv(u("I work at Google, not Microsoft.")), []want{{cat: memory.Profile, attr: "works at", value: "Google"}}},
	{"correction of a preference", conv(u("I love black tea."), u("Actually, I prefer green tea, not black tea.")), []want{{cat: memory.Preference, value: "green tea", pol: 1}}},
	{"correction with a clause", conv(u("I have a cat named Tom."), u("No, my cat is called Tim.")), []want{{cat: memory.Entity, attr: "cat", value: "Tim"}}},

	// Assistant side: cases and patterns.
	{"case with its problem", conv(u("My build fails with a module not found error after upgrading Go."), a("The fix was to run go mod tidy and clear the build cache.")), []want{
		{cat: memory.Fact, has: "build fails"},
		{cat: memory.Case, scope: "agent", has: "go mod tidy"}}},
	{"case: to do X, run", conv(a("To reset the database, run make db-reset and restart the API.")), []want{{cat: memory.Case, scope: "agent", has: "make db-reset"}}},
	{"case: fixed by", conv(a("I fixed the flaky test by pinning the random seed.")), []want{{cat: memory.Case, scope: "agent", has: "pinning the random seed"}}},
	{"pattern: whenever", conv(a("Whenever you change the schema, regenerate the models and run the migrations.")), []want{{cat: memory.Pattern, scope: "agent", has: "regenerate the models"}}},
	{"pattern: always", conv(a("Always run the linter before pushing to main.")), []want{{cat: memory.Pattern, scope: "agent", has: "linter"}}},
	{"assistant decision", conv(a("We agreed to ship the beta on the staging cluster first.")), []want{{cat: memory.Decision, scope: "agent", has: "beta"}}},

	// Harder ones.
	{"past residence is no current address", conv(u("I lived in Rome for two years.")), []want{{cat: memory.Fact, has: "Rome"}}},
	{"relation's name", conv(u("My wife's name is Sarah.")), []want{{cat: memory.Entity, attr: "wife", value: "Sarah"}}},
	{"adopted kitten", conv(u("We adopted a kitten called Miso.")), []want{{cat: memory.Entity, attr: "cat", value: "Miso"}}},
	{"next weekend", conv(u("I'm going to Berlin next weekend.")), []want{{cat: memory.Event, has: "Berlin", day: "2023-05-13"}}},
	{"habit on weekdays", conv(u("I usually work from home on Fridays.")), []want{{cat: memory.Preference, value: "work from home on Fridays", pol: 1}}},
	{"corrected age", conv(u("I'm 34 years old."), u("Actually, I'm 35, not 34.")), []want{{cat: memory.Profile, attr: "age", value: "35"}}},
	{"negated trait", conv(u("I'm not a morning person.")), []want{{cat: memory.Profile, value: "morning person", pol: -1}}},
	{"an opinion is no memory", conv(u("I think the second option is better.")), nil},

	// Nothing to remember.
	{"requests and thanks", conv(u("Can you help me write an email?"), u("Thanks, that looks great!")), nil},
	{"hedges", conv(u("ok"), u("I'm not sure."), u("I think so.")), nil},
	{"assistant chatter", conv(a("Sure, here is a draft of the email."), a("Let me know if you want changes.")), nil},
	{"third person chatter", conv(u("The weather is nice today.")), nil},
}

func (w want) matches(c memory.Candidate) bool {
	switch {
	case c.Category != w.cat,
		w.attr != "" && memory.Normalize(c.Attribute) != memory.Normalize(w.attr),
		w.value != "" && memory.Normalize(c.Value) != memory.Normalize(w.value),
		w.pol != 0 && c.Polarity != w.pol,
		w.has != "" && !strings.Contains(strings.ToLower(c.Text), strings.ToLower(w.has)),
		w.scope != "" && c.Scope != w.scope:
		return false
	case w.day != "":
		return c.EventTime != nil && c.EventTime.Format("2006-01-02") == w.day
	}
	return true
}

func describe(c memory.Candidate) string {
	day := ""
	if c.EventTime != nil {
		day = " @" + c.EventTime.Format("2006-01-02")
	}
	return fmt.Sprintf("%s/%s %q=%q pol %d%s: %q", c.Scope, c.Category, c.Attribute, c.Value, c.Polarity, day, c.Text)
}

func TestHeuristicAcceptanceTable(t *testing.T) {
	if len(table) < 40 {
		t.Fatalf("the table has %d snippets, the acceptance needs at least 40", len(table))
	}
	cats := map[string]bool{}
	h := memory.NewHeuristic()
	var tp, fp, fn int
	for _, sn := range table {
		msgs := make([]memory.Message, len(sn.msgs))
		for i, m := range sn.msgs {
			m.ID = fmt.Sprintf("m%d", i+1)
			m.CreatedAt = tableAt.Add(time.Duration(i) * time.Minute)
			msgs[i] = m
		}
		got, err := h.Extract(context.Background(), msgs)
		if err != nil {
			t.Fatalf("%s: %v", sn.name, err)
		}
		used := make([]bool, len(got))
		for _, w := range sn.want {
			cats[w.cat] = true
			found := false
			for i, c := range got {
				if !used[i] && w.matches(c) {
					used[i], found = true, true
					break
				}
			}
			if found {
				tp++
			} else {
				fn++
				t.Logf("MISS %s: want %+v", sn.name, w)
			}
		}
		for i, c := range got {
			if !used[i] {
				fp++
				t.Logf("EXTRA %s: %s", sn.name, describe(c))
			}
			if c.Abstract == "" || len([]rune(c.Abstract)) > 256 || len(c.Sources) == 0 || c.Importance <= 0 {
				t.Errorf("%s: malformed candidate %s (abstract %d runes, sources %v, importance %v)", sn.name, describe(c), len([]rune(c.Abstract)), c.Sources, c.Importance)
			}
		}
	}
	for _, c := range []string{memory.Profile, memory.Preference, memory.Entity, memory.Event, memory.Fact, memory.Decision, memory.Task, memory.Case, memory.Pattern} {
		if !cats[c] {
			t.Errorf("the table has no %s snippet", c)
		}
	}
	precision := float64(tp) / float64(tp+fp)
	recall := float64(tp) / float64(tp+fn)
	t.Logf("heuristic extractor over %d snippets: precision %.3f (%d/%d), recall %.3f (%d/%d)", len(table), precision, tp, tp+fp, recall, tp, tp+fn)
	fmt.Printf("heuristic extractor: precision %.3f recall %.3f over %d snippets\n", precision, recall, len(table))
	if precision < 0.9 || recall < 0.8 {
		t.Fatalf("precision %.3f (min 0.9), recall %.3f (min 0.8)", precision, recall)
	}
}
