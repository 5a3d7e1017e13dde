package extract

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/embed"
	"github.com/membus/membus/pkg/embed/onnx"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/testenv"
)

// onnxEmbedder opens the local ONNX model `make model` fetches (MEMBUS_MODEL_DIR, else the
// repository's data/models). Without it the test skips outside CI and fails in CI.
func onnxEmbedder(t *testing.T) embed.Embedder {
	t.Helper()
	dir := os.Getenv("MEMBUS_MODEL_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "data", "models")
	}
	if !onnx.Present(dir) {
		if testenv.InCI() {
			t.Fatalf("no ONNX model in %s: CI must run `make model` before the tests (or set MEMBUS_MODEL_DIR)", dir)
		}
		t.Skipf("no ONNX model in %s: run `make model` (or set MEMBUS_MODEL_DIR) to run the model cases", dir)
	}
	e, err := onnx.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// Paraphrase groups: each is one fact said three ways and must be one memory with three
// sources. The wordings vary in what the extraction rules were not written for: British and
// American spelling, the value first ("Blue is my favorite color"), fillers and adverbs, and
// a sentence one rule reads as a preference and another as a plain fact.
var sameFact = []struct {
	name string
	says []string
}{
	{"issue 17: favourite colour, filler, value first", []string{
		"My favorite color is blue.", "Just so you know, my favourite colour is blue.", "Blue is my favorite color!"}},
	{"value first with an adverb, British spelling, an interjection", []string{
		"Pizza is definitely my favourite food.", "My favorite food is pizza.", "Honestly, my favourite food is pizza!"}},
	{"a place behind fillers and an adverb", []string{
		"I live in Boston.", "Just so you know, I live in Boston.", "Hi! I currently live in Boston."}},
	{"a hometown said forwards and backwards", []string{
		"My hometown is Boston.", "Boston is my hometown.", "I'm originally from Boston."}},
	{"a relation forwards, backwards and by name", []string{
		"My sister is Marta.", "Marta is my sister.", "My sister's name is Marta."}},
	{"theatre and theater, with and without an adverb", []string{
		"I love the theatre.", "I really love the theater!", "Honestly, I love the theatre."}},
	{"organise and organize, the time first", []string{
		"I organise the book club every month.", "I organize the book club every month.", "Every month I organize the book club."}},
	{"a plain fact reordered and behind a filler", []string{
		"My team ships the billing release every Friday afternoon.",
		"Every Friday afternoon, my team ships the billing release.",
		"Just so you know, my team ships the billing release every Friday afternoon."}},
}

// Pairs that must stay apart: a changed value supersedes the old memory (conflict), another
// slot or another person is another memory (distinct); neither is ever merged.
var notSameFact = []struct {
	name        string
	first, then string
	supersedes  bool // true: then supersedes first; false: both stay active
}{
	{"Boston → Denver supersedes", "I live in Boston.", "I live in Denver.", true},
	{"a new favourite in other spelling and order supersedes", "My favorite color is blue.", "Green is my favourite colour.", true},
	{"likes coffee → doesn't like coffee supersedes", "I like coffee.", "I don't like coffee.", true},
	{"sister Marta and brother Marco are two people", "My sister is Marta.", "My brother is Marco.", false},
	{"likes cats and likes bats are two slots", "I really like cats.", "I really like bats.", false},
	{"the sister's favourite is not the user's", "My favorite color is blue.", "My sister's favorite color is blue.", false},
	{"a plain fact with another day is another fact", "My team ships the billing release every Friday afternoon.",
		"My team ships the billing release every Monday afternoon.", false},
}

// TestOneFactOneMemory (issue 17): the same fact in other words is one memory that keeps every
// source — said in one archive or across three, with the hash embedder and with the local ONNX
// model — and a changed value is a conflict, never a merge.
func TestOneFactOneMemory(t *testing.T) {
	embedders := []struct {
		name string
		open func(t *testing.T) embed.Embedder
	}{
		{"hash", func(*testing.T) embed.Embedder { return embed.NewHash() }},
		{"onnx", onnxEmbedder},
	}
	for _, em := range embedders {
		t.Run(em.name, func(t *testing.T) {
			e := newEnvWith(t, em.open(t))
			n := 0
			for _, tc := range sameFact {
				for _, oneArchive := range []bool{true, false} {
					n++
					user, mode := fmt.Sprintf("u%02d", n), "three archives"
					if oneArchive {
						mode = "one archive"
					}
					t.Run(tc.name+"/"+mode, func(t *testing.T) {
						e.t = t
						want := e.tell(user, oneArchive, tc.says...)
						all, err := e.st.Memories(e.ctx, store.MemoryFilter{AccountID: acct, UserID: user})
						if err != nil {
							t.Fatal(err)
						}
						if len(all) != 1 || !all[0].Active() {
							t.Fatalf("%d memories, want one active:\n%s", len(all), listMemories(all))
						}
						if got := sourceList(all[0]); got != strings.Join(want, ",") {
							t.Fatalf("sources %s, want every statement %s:\n%s", got, strings.Join(want, ","), listMemories(all))
						}
					})
				}
			}
			for _, tc := range notSameFact {
				for _, oneArchive := range []bool{true, false} {
					n++
					user, mode := fmt.Sprintf("u%02d", n), "two archives"
					if oneArchive {
						mode = "one archive"
					}
					t.Run(tc.name+"/"+mode, func(t *testing.T) {
						e.t = t
						srcs := e.tell(user, oneArchive, tc.first, tc.then)
						all, err := e.st.Memories(e.ctx, store.MemoryFilter{AccountID: acct, UserID: user})
						if err != nil {
							t.Fatal(err)
						}
						if len(all) != 2 {
							t.Fatalf("%d memories, want two:\n%s", len(all), listMemories(all))
						}
						byFirstSource := map[string]store.Memory{}
						for _, m := range all {
							if len(m.Sources) != 1 {
								t.Fatalf("a memory with sources %s: the two statements were merged:\n%s", sourceList(m), listMemories(all))
							}
							byFirstSource[m.Sources[0].SessionID+"/"+m.Sources[0].MessageID] = m
						}
						first, then := byFirstSource[srcs[0]], byFirstSource[srcs[1]]
						if first.ID == "" || then.ID == "" || !then.Active() {
							t.Fatalf("want one memory per statement, the second active:\n%s", listMemories(all))
						}
						if tc.supersedes && (first.Active() || first.SupersededBy != then.ID) {
							t.Fatalf("want the first superseded by the second:\n%s", listMemories(all))
						}
						if !tc.supersedes && !first.Active() {
							t.Fatalf("want both active:\n%s", listMemories(all))
						}
					})
				}
			}
			e.t = t
		})
	}
}

// tell says each text as its own message of user — in one session committed once (one
// archive), or each in its own session committed on its own — and returns the sources, as
// "session/message", in order.
func (e *env) tell(user string, oneArchive bool, texts ...string) []string {
	e.t.Helper()
	var srcs []string
	if oneArchive {
		session := user + "-s"
		for _, text := range texts {
			e.say(user, session, text)
			srcs = append(srcs, fmt.Sprintf("%s/%s-m%02d", session, session, e.seq[session]))
		}
		e.commit(user, session, contract.CommitSync, session+"-r")
		return srcs
	}
	for i, text := range texts {
		session := fmt.Sprintf("%s-s%d", user, i+1)
		e.say(user, session, text)
		srcs = append(srcs, fmt.Sprintf("%s/%s-m%02d", session, session, e.seq[session]))
		e.commit(user, session, contract.CommitSync, session+"-r")
	}
	return srcs
}

func sourceList(m store.Memory) string {
	var out []string
	for _, s := range m.Sources {
		out = append(out, s.SessionID+"/"+s.MessageID)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func listMemories(ms []store.Memory) string {
	var b strings.Builder
	for _, m := range ms {
		state := "active"
		if !m.Active() {
			state = "superseded by " + m.SupersededBy
		}
		fmt.Fprintf(&b, "  %s %s/%s %q=%q pol %d %q sources %s (%s)\n", m.ID, m.Scope, m.Category, m.Attribute, m.Value,
			m.Polarity, m.Text, sourceList(m), state)
	}
	return b.String()
}
