package ingest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/services/ingest"
)

// BenchmarkCapture renders the messages of `membus bench ingest` (a plain text of about 260
// characters), one with a secret, and a tool call: the redact stage of ingest, per message.
func BenchmarkCapture(b *testing.B) {
	text := "1234. " + strings.Repeat("The quick brown fox jumps over the lazy dog while we plan the trip to Lisbon in May. ", 3)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		name string
		m    contract.Message
	}{
		{"plain", contract.Message{MessageID: "m", Role: contract.RoleUser, CreatedAt: at, Parts: []contract.Part{{Type: contract.PartText, Text: text}}}},
		{"secret", contract.Message{MessageID: "m", Role: contract.RoleUser, CreatedAt: at,
			Parts: []contract.Part{{Type: contract.PartText, Text: text + " my DB_PASSWORD=Tr0ub4dor&3 and Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0"}}}},
		{"tool call", contract.Message{MessageID: "m", Role: contract.RoleAssistant, CreatedAt: at,
			Parts: []contract.Part{{Type: contract.PartText, Text: text}, {Type: contract.PartToolCall, ID: "c1", Name: "shell", Arguments: `{"cmd":"ls -la /tmp"}`}}}},
	}
	c, err := ingest.NewCapturer(nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, ok := c.Capture(tc.m); !ok {
					b.Fatalf("%s: dropped", tc.name)
				}
			}
		})
	}
}
