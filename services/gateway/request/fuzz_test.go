package request

import (
	"encoding/json"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/membus/membus/pkg/contract"
)

// FuzzDecode feeds arbitrary bodies to the request decoders: they never panic, and whatever
// they accept as messages normalises into a TurnEvent that passes contract validation and
// encodes as valid UTF-8 JSON.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{"messages":[{"role":"user","content":"hi"}]}`,
		`{"messages":[{"role":"assistant","content":[{"type":"text","text":"ok"},{"type":"tool_call","id":"1","name":"x","arguments":"{}"}]}]}`,
		`{"messages":[{"role":"tool","content":[{"type":"tool_result","tool_call_id":"1","output":"o"}],"created_at":"2026-01-01T00:00:00Z"}]}`,
		`{"wait":false,"keep_recent":3,"timeout_ms":10}`,
		`{"query":"where do I live","limit":-1,"scopes":["user"]}`,
		`{"text":"I prefer window seats","agent_id":"main"}`,
		`{"messages":[{"role":"user","content":"\xff"}]}`,
		`[]`, `null`, `{"messages":7}`, `{`,
	} {
		f.Add([]byte(seed))
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, body []byte) {
		var mr Messages
		if DecodeJSON(body, &mr, false) == nil {
			msgs := make([]contract.Message, 0, len(mr.Messages))
			for i, in := range mr.Messages {
				m, aerr := Normalise(in, i, "fuzz", now)
				if aerr != nil {
					if aerr.Status < 400 || aerr.Status > 499 {
						t.Fatalf("a bad message answered %d", aerr.Status)
					}
					return
				}
				msgs = append(msgs, m)
			}
			if len(msgs) == 0 {
				return
			}
			ev := contract.TurnEvent{V: contract.Version, EventID: "fuzz", AccountID: "acme", UserID: "u", AgentID: "main",
				SessionID: "s", Source: "http", Messages: msgs, SentAt: now}
			if err := ev.Validate(); err != nil {
				return // the handler answers 400 for it
			}
			out, err := json.Marshal(ev)
			if err != nil || !utf8.Valid(out) {
				t.Fatalf("an accepted turn does not encode: %v", err)
			}
		}
		for _, v := range []any{new(Commit), new(Store), new(Forget), new(contract.RecallRequest)} {
			if aerr := DecodeJSON(body, v, true); aerr != nil && aerr.Status != 400 {
				t.Fatalf("decode answered %d", aerr.Status)
			}
		}
	})
}
