package recall

import "testing"

func TestListQuestion(t *testing.T) {
	for _, tc := range []struct {
		query string
		want  bool
	}{
		{"What books has John read?", true},
		{"Which cities has Tim been to?", true},
		{"  what kind of art does Caroline make?", true},
		{"What's Melanie's favourite book?", true},
		{"What did Caroline paint?", false},
		{"What is Jon's job?", false},
		{"what was the name of the dog", false},
		{"What does John like about LeBron?", false},
		{"What do Jon and Gina have in common?", false},
		{"When did Melanie go camping?", false},
		{"Whatever happened to the plan?", false},
		{"Did John read Dune?", false},
	} {
		if got := listQuestion(tc.query); got != tc.want {
			t.Errorf("listQuestion(%q) = %v, want %v", tc.query, got, tc.want)
		}
	}
}

func TestSpecifics(t *testing.T) {
	q := questionWords("What books has John read?")
	for _, tc := range []struct {
		text string
		want int
	}{
		{`John is reading a book that they enjoy.`, 0},
		{`John: I'm reading "Dune" by Frank Herbert. It's great.`, 3},         // Dune, Frank, Herbert; "It's" starts a sentence
		{`John: I finished "The Alchemist" last week.`, 1},                    // "The" is a function word
		{`Tim: Great bookshelf, John! I saw The Alchemist on there.`, 1},      // John is asked about; "I" follows "!"
		{`Harry Potter and Game of Thrones are amazing - John is hooked!`, 3}, // capped
		{`John: Thanks! I'm currently reading a book. I highly recommend it!`, 0},
		{`Caroline: Check out my painting for the art show! [shares a photo of a tree]`, 0},
		{`Nate: I played Valorant with my friends. Fun. Next: Cyberpunk`, 1},       // after "." and ":" a word starts a sentence
		{`Nate: I loved “Little Women” and Joanna’s pick, ‘Eternal Sunshine’.`, 3}, // Little, Women, Joanna’s
		{`LeBron's block in Game 7`, 1},                                            // LeBron's starts the text
		{`Jürgen: we met Anna`, 1},                                                 // not an ASCII speaker: "rgen" is lower-case
		{``, 0},
	} {
		if got := specifics(q, tc.text); got != tc.want {
			t.Errorf("specifics(%q) = %d, want %d", tc.text, got, tc.want)
		}
	}
}

func TestAddSpecifics(t *testing.T) {
	vague := memoryCand("vague", 1.0)
	vague.text = "John is reading a book that they enjoy."
	named := memoryCand("named", 0.95)
	named.text = `John is reading "Dune" by Frank Herbert.`
	turn := archiveCand("turn", "s1", 4, 0.9)
	turn.text = "John: Not yet.\nTim: Have you read The Name of the Wind by Patrick Rothfuss?" // the names are the turn before's

	cands := []candidate{vague, named, turn}
	addSpecifics(cands, "What did John read last week?")
	for _, c := range cands {
		if c.parts.Boost != 0 {
			t.Errorf("%s: boost %v for a question that is not a list question", c.id, c.parts.Boost)
		}
	}

	addSpecifics(cands, "What books has John read?")
	added := map[string]float64{"vague": 0, "named": specificsWeight, "turn": 0}
	for i, c := range cands {
		before := []float64{1.0, 0.95, 0.9}[i]
		if !near(c.score, before+added[c.id]) || !near(c.parts.Boost, added[c.id]) {
			t.Errorf("%s: score %v boost %v, want %v added", c.id, c.score, c.parts.Boost, added[c.id])
		}
	}
	if cands[1].score <= cands[0].score {
		t.Errorf("the memory that names the book (%v) does not rank above the one that restates the question (%v)", cands[1].score, cands[0].score)
	}
}

// BenchmarkAddSpecifics: the cost the specifics add to a list question's recall, for 48
// candidates of a conversation's length.
func BenchmarkAddSpecifics(b *testing.B) {
	texts := []string{
		`John: I'm reading "Dune" by Frank Herbert. It's a great story about religion and human control over ecology. What about you?`,
		`John is reading a book that they enjoy.`,
		`Tim: Great bookshelf! I saw that you had "The Alchemist" on there, one of my favorites. Did you enjoy it?` + "\nJohn: Here is my shelf.",
	}
	cands := make([]candidate, 48)
	for i := range cands {
		cands[i] = memoryCand("m", 1)
		cands[i].text = texts[i%len(texts)]
	}
	b.ReportAllocs()
	for b.Loop() {
		addSpecifics(cands, "What books has John read?")
	}
}
