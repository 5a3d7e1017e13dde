package ingest_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/services/ingest"
)

// secrets are real-looking credentials in the formats people paste into chats and tools.
// secret is the part that must not survive; text is how it appears.
var secrets = []struct {
	name, text, secret string
}{
	{"OpenAI key", "my key is sk-proj-Zt8xQ2vL9mN4bR7cK1pW3yH6jF0dS5aE2gT in the env", "Zt8xQ2vL9mN4bR7cK1pW3yH6jF0dS5aE2gT"},
	{"OpenAI legacy key", "OPENAI=sk-4eC39HqLyjWDarjtT1zdp7dc4eC39HqLyjWDarjtT1zdp7dc ok", "4eC39HqLyjWDarjtT1zdp7dc"},
	{"AWS access key id", "aws id AKIAIOSFODNN7EXAMPLE here", "AKIAIOSFODNN7EXAMPLE"},
	{"AWS secret access key", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
	{"GitHub token", "use ghp_16C7e42F292c6912E7710c838347Ae178B4a for the push", "16C7e42F292c6912E7710c838347Ae178B4a"},
	{"Slack bot token", "slack: xoxb-2048731298-4093485094-aBcDeFgHiJkLmNoPqRsTuVwX", "aBcDeFgHiJkLmNoPqRsTuVwX"},
	{"JWT", "Authorization header eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c done",
		"SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"},
	{"Bearer token", "curl -H 'Authorization: Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0' https://api", "9f8e7d6c5b4a39281706f5e4d3c2b1a0"},
	{"PEM private key", "here:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi\nZ1BjP5CE/Wm/Rr500P\n-----END RSA PRIVATE KEY-----\nthanks",
		"MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi"},
	{"OpenSSH private key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAE\n-----END OPENSSH PRIVATE KEY-----", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAE"},
	{"password=", "login with password=hunter2 please", "hunter2"},
	{"password: quoted", `set password: "correct horse battery staple" now`, "battery staple"},
	{"api_key:", "config api_key: 3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c", "3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"},
	{"env var password", "DB_PASSWORD=Tr0ub4dor&3 in .env", "Tr0ub4dor&3"},
	{"JSON password", `{"user":"bob","password":"hunter22"}`, "hunter22"},
}

func partsText(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var ps []contract.Part
	if err := json.Unmarshal(raw, &ps); err != nil {
		t.Fatalf("parts %s: %v", raw, err)
	}
	var b strings.Builder
	for _, p := range ps {
		for _, s := range []string{p.Text, p.Caption, p.URL, p.ID, p.Name, p.Arguments, p.ToolCallID, p.Output} {
			b.WriteString(s)
			b.WriteString("\n")
		}
	}
	return b.String()
}

// TestCaptureRedactsSecrets: no secret survives in the stored content or parts, whether it is
// in text, a tool call's arguments, a tool result's output or an image caption.
func TestCaptureRedactsSecrets(t *testing.T) {
	for _, s := range secrets {
		places := map[string]contract.Message{
			"text":        {MessageID: "m", Role: "user", Parts: []contract.Part{{Type: contract.PartText, Text: s.text}}},
			"tool call":   {MessageID: "m", Role: "assistant", Parts: []contract.Part{{Type: contract.PartToolCall, ID: "c1", Name: "shell", Arguments: s.text}}},
			"tool result": {MessageID: "m", Role: "tool", Parts: []contract.Part{{Type: contract.PartToolResult, ToolCallID: "c1", Name: "shell", Output: s.text}}},
			"caption":     {MessageID: "m", Role: "user", Parts: []contract.Part{{Type: contract.PartImage, Caption: s.text, URL: "https://example.com/a.png"}}},
		}
		for where, m := range places {
			t.Run(s.name+"/"+where, func(t *testing.T) {
				got, ok := ingest.Capture(m)
				if !ok {
					t.Fatal("message dropped")
				}
				if strings.Contains(got.Content, s.secret) {
					t.Errorf("content keeps the secret: %q", got.Content)
				}
				if pt := partsText(t, got.Parts); strings.Contains(pt, s.secret) {
					t.Errorf("parts keep the secret: %s", got.Parts)
				}
				if !strings.Contains(got.Content, "[REDACTED]") {
					t.Errorf("content %q has no [REDACTED] marker", got.Content)
				}
			})
		}
	}
}

// TestCaptureRules: injected blocks are stripped, tool calls and results rendered, captions
// kept, and a message with nothing left is dropped.
func TestCaptureRules(t *testing.T) {
	cases := []struct {
		name     string
		parts    []contract.Part
		want     []string // substrings of the capture text
		wantNot  []string
		dropped  bool
		numParts int
	}{
		{
			name:     "recalled block fed back is stripped",
			parts:    []contract.Part{{Type: contract.PartText, Text: "<relevant-memories>\n- User lives in Boston\n- likes coffee\n</relevant-memories>\nWhat should I cook tonight?"}},
			want:     []string{"What should I cook tonight?"},
			wantNot:  []string{"relevant-memories", "lives in Boston", "likes coffee"},
			numParts: 1,
		},
		{
			name:    "only a recalled block: nothing to store",
			parts:   []contract.Part{{Type: contract.PartText, Text: "<relevant-memories>\n- User lives in Boston\n</relevant-memories>\n  "}},
			dropped: true,
		},
		{
			name:     "two blocks and membus's own context block",
			parts:    []contract.Part{{Type: contract.PartText, Text: "<relevant-memories>a Boston</relevant-memories> hi <membus-context>Denver</membus-context> there <relevant-memories>\nb Max\n</relevant-memories>"}},
			want:     []string{"hi", "there"},
			wantNot:  []string{"Boston", "Denver", "Max"},
			numParts: 1,
		},
		{
			name: "tool call and result are rendered",
			parts: []contract.Part{
				{Type: contract.PartToolCall, ID: "c1", Name: "weather", Arguments: `{"city":"Oslo"}`},
				{Type: contract.PartToolResult, ToolCallID: "c1", Name: "weather", Output: "12°C and rain"},
				{Type: contract.PartToolResult, ToolCallID: "c2", Name: "files", Output: "no such file", IsError: true},
			},
			want:     []string{"weather", `{"city":"Oslo"}`, "12°C and rain", "files", "error", "no such file"},
			numParts: 3,
		},
		{
			name:     "image caption kept",
			parts:    []contract.Part{{Type: contract.PartImage, Caption: "a golden retriever on a beach", URL: "https://example.com/dog.jpg"}},
			want:     []string{"a golden retriever on a beach"},
			numParts: 1,
		},
		{
			name:    "image without caption: nothing to store",
			parts:   []contract.Part{{Type: contract.PartImage, URL: "https://example.com/dog.jpg"}},
			dropped: true,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := ingest.Capture(contract.Message{MessageID: "m", Role: "user", Parts: c.parts, CreatedAt: baseTime})
			if ok == c.dropped {
				t.Fatalf("kept = %v, want %v (content %q)", ok, !c.dropped, got.Content)
			}
			if c.dropped {
				return
			}
			for _, w := range c.want {
				if !strings.Contains(got.Content, w) {
					t.Errorf("content %q lacks %q", got.Content, w)
				}
			}
			for _, w := range c.wantNot {
				if strings.Contains(got.Content, w) || strings.Contains(string(got.Parts), w) {
					t.Errorf("%q survived: content %q parts %s", w, got.Content, got.Parts)
				}
			}
			var ps []contract.Part
			if err := json.Unmarshal(got.Parts, &ps); err != nil || len(ps) != c.numParts {
				t.Errorf("parts %s: %d parts (err %v), want %d", got.Parts, len(ps), err, c.numParts)
			}
			if got.Tokens <= 0 {
				t.Errorf("tokens = %d", got.Tokens)
			}
		})
	}
}

// TestCaptureThroughTheBus: what ingest stores from a published turn follows the capture rules
// on both SQL backends (recalled text fed back is never stored; secrets never reach SQL).
func TestCaptureThroughTheBus(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *store.Store) {
		h := newHarness(t, st)
		h.start(ingest.Defaults())
		var msgs []contract.Message
		msgs = append(msgs, msg("fed", 0, "user", "<relevant-memories>\n- User lives in Boston\n</relevant-memories>\nplan my weekend", baseTime))
		msgs = append(msgs, msg("only-block", 1, "user", "<relevant-memories>- User lives in Boston</relevant-memories>", baseTime.Add(time.Second)))
		for i, s := range secrets {
			msgs = append(msgs, msg("secret-"+s.name, i+2, "user", s.text, baseTime.Add(time.Duration(i+2)*time.Second)))
		}
		msgs = append(msgs, contract.Message{MessageID: "tool", Position: len(msgs), Role: "assistant", CreatedAt: baseTime.Add(time.Minute),
			Parts: []contract.Part{
				{Type: contract.PartToolCall, ID: "c1", Name: "deploy", Arguments: `{"token":"ghp_16C7e42F292c6912E7710c838347Ae178B4a"}`},
				{Type: contract.PartImage, Caption: "deploy diagram"},
			}})
		h.publish(event("s-cap", "cap", msgs...), "cap")
		h.settled(30 * time.Second)

		hist := h.history("acme", "s-cap")
		if len(hist) != len(msgs)-1 {
			t.Fatalf("stored %d messages, want %d (the block-only message dropped)", len(hist), len(msgs)-1)
		}
		for _, m := range hist {
			all := m.Content + "\n" + partsText(t, m.Parts)
			if strings.Contains(all, "Boston") || strings.Contains(all, "relevant-memories") {
				t.Errorf("%s: recalled text stored: %q", m.MessageID, all)
			}
			for _, s := range secrets {
				if strings.Contains(all, s.secret) {
					t.Errorf("%s: secret %s stored: %q", m.MessageID, s.name, all)
				}
			}
			if strings.Contains(all, "16C7e42F292c6912E7710c838347Ae178B4a") {
				t.Errorf("%s: GitHub token in tool arguments stored", m.MessageID)
			}
			if m.MessageID == "tool" && (!strings.Contains(m.Content, "deploy") || !strings.Contains(m.Content, "deploy diagram")) {
				t.Errorf("tool message content %q lacks the rendered call or the caption", m.Content)
			}
		}
	})
}
