package memory_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/membus/membus/pkg/memory"
)

// benchSession is a commit's worth of conversation: facts, preferences, an event with a
// relative date, chit-chat and the assistant's answers.
func benchSession() []memory.Message {
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
	return alternating(lines)
}

// alternating is a conversation of texts, Caroline (the user) and Melanie (the assistant) in
// turn, a minute apart.
func alternating(texts []string) []memory.Message {
	at := time.Date(2025, 5, 8, 13, 56, 0, 0, time.UTC)
	msgs := make([]memory.Message, len(texts))
	for i, l := range texts {
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

// benchLongSession is the system test's commit: 20 messages of about 1,500 characters each,
// user and assistant in turn, every sentence a different mix of facts, dates and chit-chat.
func benchLongSession() []memory.Message {
	sentences := []string{
		"Hey Mel, it's been a while since we talked!",
		"Last Friday I went to a pottery class with my friend Anna and it was amazing.",
		"I've been thinking about going back to school to study counseling.",
		"My kids love the beach, so we usually go camping there every summer.",
		"We decided to paint the kitchen blue on May 3rd.",
		"I'm a software engineer at Google, but I'm thinking about a change.",
		"Two weeks ago my brother Tom moved to Seattle for a new job.",
		"That sounds like so much fun, I'm glad you had a great time.",
		"I don't like horror movies anymore; they give me nightmares.",
		"Next month I'm going to run a half marathon in Boston.",
		"Honestly, reading is what keeps me sane these days.",
		"My dog Max is a golden retriever and he loves swimming in the lake.",
		"I need to call the dentist tomorrow about my appointment.",
		"In 2019 I started volunteering at the local animal shelter.",
		"The support group meeting yesterday was really powerful and it made me feel accepted.",
		"I usually meditate every morning before work.",
		"Remember that painting I showed you? I finished it last weekend.",
		"My favorite book is Charlotte's Web, I read it to my kids all the time.",
	}
	texts := make([]string, 20)
	for i := range texts {
		var b strings.Builder
		for j := 0; b.Len() < 1500; j++ {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(sentences[(i*7+j)%len(sentences)])
		}
		texts[i] = b.String()
	}
	return alternating(texts)
}

// A commit of long messages (the system test's 20 messages of about 1,500 characters).
func BenchmarkHeuristicExtractLong(b *testing.B) {
	msgs := benchLongSession()
	h := memory.NewHeuristic()
	ctx := context.Background()
	if _, err := h.Extract(ctx, msgs); err != nil { // the tagger's model loads outside the loop
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		cs, err := h.Extract(ctx, msgs)
		if err != nil || len(cs) == 0 {
			b.Fatalf("extract: %d candidates, %v", len(cs), err)
		}
	}
}
