package memory_test

import (
	"math"
	"strings"
	"testing"

	"github.com/membus/membus/pkg/memory"
)

func TestFactPhrase(t *testing.T) {
	cases := []struct{ name, a, b string }{
		{"colour and color", "favourite colour", "favorite color"},
		{"theatre and theater, with and without an article", "the theatre", "theater"},
		{"organise and organize, inflected", "organised the book club", "organizes the book club"},
		{"analyse and analyze", "analysed the data", "analyzed the data"},
		{"fillers and forms of be drop out", "User is really just honestly into jazz", "User into jazz"},
		{"a pronoun object is no content", "check them out", "check it out"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if a, b := memory.FactPhrase(tc.a), memory.FactPhrase(tc.b); a != b {
				t.Fatalf("FactPhrase(%q) = %q, FactPhrase(%q) = %q, want them equal", tc.a, a, tc.b, b)
			}
		})
	}
	apart := []struct{ name, a, b string }{
		{"four is not for", "four", "for"},
		{"hour and your stay", "hour", "your"},
		{"a negation stays", "User likes coffee", "User doesn't like coffee"},
		{"prepositions stay", "moved to Boston", "moved from Boston"},
		{"modal verbs stay", "User will move to Denver", "User moved to Denver"},
		{"the possessor stays", "User's favorite color", "User's sister's favorite color"},
	}
	for _, tc := range apart {
		t.Run(tc.name, func(t *testing.T) {
			if a, b := memory.FactPhrase(tc.a), memory.FactPhrase(tc.b); a == b {
				t.Fatalf("FactPhrase(%q) = FactPhrase(%q) = %q, want them apart", tc.a, tc.b, a)
			}
		})
	}
}

func slot(cat, attr string, pol int, value, text string) memory.Comparable {
	return memory.Comparable{Scope: "user", Category: cat, Subject: "User", Attribute: attr, Polarity: pol, Value: value, Text: text}
}

func TestSameFact(t *testing.T) {
	blue := slot(memory.Preference, "favorite color", 1, "blue", "User's favorite color is blue.")
	cases := []struct {
		name string
		a, b memory.Comparable
		want bool
	}{
		{"another spelling of the slot", blue, slot(memory.Preference, "favourite colour", 1, "Blue", "User's favourite colour is Blue."), true},
		{"another category and word order, no slot", blue, slot(memory.Fact, "", 1, "", "Blue is User's favorite color!"), true},
		{"another value", blue, slot(memory.Preference, "favorite color", 1, "green", "User's favorite color is green."), false},
		{"another polarity", blue, slot(memory.Preference, "favorite color", -1, "blue", "User's favorite color is not blue."), false},
		{"another subject's slot", blue, slot(memory.Fact, "", 1, "", "User's sister's favorite color is blue."), false},
		{"another scope", blue, memory.Comparable{Scope: "agent", Category: memory.Preference, Subject: "User", Attribute: "favorite color", Polarity: 1, Value: "blue"}, false},
		{"the same words reordered", slot(memory.Fact, "", 1, "", "Every Friday User's team ships the release."),
			slot(memory.Fact, "", 1, "", "User's team ships the release every Friday."), true},
		{"one more word is not the same fact (near-duplicate rules judge it)", slot(memory.Fact, "", 1, "", "User's team ships the release."),
			slot(memory.Fact, "", 1, "", "User's team ships the release every Friday."), false},
		{"one event on two days", memory.Comparable{Scope: "user", Category: memory.Event, Text: "User went hiking.", EventDay: "2025-03-01"},
			memory.Comparable{Scope: "user", Category: memory.Event, Text: "User went hiking.", EventDay: "2025-03-08"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := memory.SameFact(tc.a, tc.b); got != tc.want {
				t.Fatalf("SameFact(%q, %q) = %v, want %v", tc.a.Text, tc.b.Text, got, tc.want)
			}
		})
	}
}

func TestSubstituted(t *testing.T) {
	cases := []struct {
		name, a, b string
		want       bool
	}{
		{"a day changed", "User's team ships on Fridays.", "User's team ships on Mondays.", true},
		{"a number changed", "User has 2 kids.", "User has 3 kids.", true},
		{"a place changed", "User's sister moved to Boston.", "User's sister moved to Denver.", true},
		{"a day added", "User's team ships the release.", "User's team ships the release every Friday.", false},
		{"a typo in a name", "User met Catherine at the gym.", "User met Catharine at the gym.", false},
		{"common words changed", "Joanna will keep you posted.", "Joanna will keep you updated.", false},
		{"a sentence's first word is no value", "Keep going, Maria is here.", "Honestly, Maria is here.", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := memory.Substituted(tc.a, tc.b); got != tc.want {
				t.Fatalf("Substituted(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
			}
		})
	}
}

func TestNearDuplicateNeverMergesAChangedValue(t *testing.T) {
	fact := func(text string) memory.Comparable {
		return memory.Comparable{Scope: "user", Category: memory.Fact, Subject: "User", Text: text, ContentHash: memory.ContentHash(text)}
	}
	a := fact("User's team ships the billing release every Friday afternoon.")
	b := fact("User's team ships the billing release every Monday afternoon.")
	if memory.Jaccard(memory.Normalize(a.Text), memory.Normalize(b.Text)) < memory.JaccardDuplicate {
		t.Fatal("the texts are not Jaccard-similar: the case does not test what it claims")
	}
	if r, ok := memory.NearDuplicate(a, b); ok {
		t.Fatalf("NearDuplicate = %s: a changed day was merged", r)
	}
	if r, ok := memory.NearDuplicate(a, fact(strings.Replace(a.Text, "release", "releases", 1))); !ok || r != memory.DupSameFact {
		t.Fatalf("NearDuplicate = %q %v, want %s", r, ok, memory.DupSameFact)
	}
}

// TestNearDuplicateModelCosine: the cosine rule takes the candidate's model threshold
// (DupCosine, e5-small-v2's 0.96) instead of CosineDuplicate when it names one.
func TestNearDuplicateModelCosine(t *testing.T) {
	// Two texts no word rule joins, with vectors at cosine 0.93.
	vec := func(c float64) []float32 { return []float32{float32(c), float32(math.Sqrt(1 - c*c))} }
	mem := func(text string, v []float32, dup float64) memory.Comparable {
		return memory.Comparable{Scope: "user", Category: memory.Fact, Text: text, ContentHash: memory.ContentHash(text), Embedding: v, DupCosine: dup}
	}
	a, b := "the quarterly numbers looked fine to everyone", "our finance review went smoothly this spring"
	tests := []struct {
		name string
		dup  float64
		want bool
	}{
		{"the rules' own 0.92", 0, true},
		{"a model's 0.96", 0.96, false},
		{"a model's 0.90", 0.90, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, ok := memory.NearDuplicate(mem(a, vec(1), 0), mem(b, vec(0.93), tt.dup))
			if ok != tt.want || ok && r != memory.DupCosine {
				t.Fatalf("NearDuplicate = %q %v, want %v by the cosine rule", r, ok, tt.want)
			}
		})
	}
}
