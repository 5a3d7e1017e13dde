package memory_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/membus/membus/pkg/memory"
)

// benchSession is a commit's worth of conversation: facts, preferences, an event with a
// relative date, chit-chat and the assistant's answers.
func benchSession() []memory.Message {
	at := time.Date(2025, 5, 8, 13, 56, 0, 0, time.UTC)
	lines := []string{
		"Hi! My name is Caroline and I live in Lisbon.",
		"Nice to meet you, Caroline. What do you do?",
		"I work as a nurse at the children's hospital. I love hiking in the mountains on weekends.",
		"That sounds wonderful. Any trips planned?",
		"Yesterday I went to an LGBTQ support group meeting; it was so powerful.",
		"I'm glad it helped. How is your family?",
		"My sister Marta moved to Denver last month. My favorite color is blue, by the way.",
		"Good to know! Anything else on your mind?",
		"I don't like coffee anymore, I switched to green tea. We decided to adopt a dog in June.",
		"Congratulations on the decision!",
	}
	msgs := make([]memory.Message, len(lines))
	for i, l := range lines {
		role, name := "user", "Caroline"
		if i%2 == 1 {
			role, name = "assistant", "Melanie"
		}
		msgs[i] = memory.Message{ID: fmt.Sprintf("m-%d", i), Role: role, Name: name, Text: l, CreatedAt: at.Add(time.Duration(i) * time.Minute)}
	}
	return msgs
}

// The heuristic extractor runs over every committed archive (extract's main CPU cost without an
// LLM).
func BenchmarkHeuristicExtract(b *testing.B) {
	msgs := benchSession()
	h := memory.NewHeuristic()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		cs, err := h.Extract(ctx, msgs)
		if err != nil || len(cs) == 0 {
			b.Fatalf("extract: %d candidates, %v", len(cs), err)
		}
	}
}

// Dedup compares each candidate with the user's similar memories: NearDuplicate and SameFact run
// once per pair.
func BenchmarkNearDuplicate(b *testing.B) {
	a := memory.Comparable{Scope: "user", Category: memory.Preference, Subject: "Caroline", Attribute: "favorite color", Value: "blue", Polarity: 1,
		Text: "Caroline's favorite color is blue.", ContentHash: memory.ContentHash("Caroline's favorite color is blue.")}
	c := memory.Comparable{Scope: "user", Category: memory.Fact, Subject: "Caroline", Polarity: 1,
		Text: "Just so you know, Caroline's favourite colour is blue!", ContentHash: memory.ContentHash("Just so you know, Caroline's favourite colour is blue!")}
	b.ReportAllocs()
	for b.Loop() {
		_, _ = memory.NearDuplicate(a, c)
		_ = memory.SameFact(a, c)
	}
}
