package extract

import (
	"testing"

	"github.com/membus/membus/pkg/store"
)

func TestArchiveAbstract(t *testing.T) {
	user := func(text string) store.Message { return store.Message{Role: "user", Content: text} }
	cases := []struct {
		name string
		msgs []store.Message
		mems []store.Memory
		want string
	}{
		{"memories, most important first, one sentence each",
			[]store.Message{user("hi")},
			[]store.Memory{{Text: "User likes tea", Importance: 0.2}, {Text: "User lives in Lisbon.", Importance: 0.9}},
			"User lives in Lisbon. User likes tea."},
		{"no memories: what the user said, questions keep their mark",
			[]store.Message{user("What is my favourite colour?"), {Role: "assistant", Content: "Teal."}, user("thanks")},
			nil, "The user said: What is my favourite colour? thanks."},
		{"nothing said by the user", []store.Message{{Role: "assistant", Content: "Hello"}}, nil, "1 archived message."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := archiveAbstract(c.msgs, c.mems); got != c.want {
				t.Errorf("archiveAbstract = %q, want %q", got, c.want)
			}
		})
	}
}
