package contract_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/membus/membus/pkg/contract"
)

func validTurn() contract.TurnEvent {
	at := time.Date(2025, 3, 14, 16, 2, 11, 0, time.UTC)
	return contract.TurnEvent{
		V: contract.Version, EventID: "adv-1", AccountID: "acme", UserID: "u-alice", AgentID: "main",
		SessionID: "s-1", Source: "openclaw",
		Messages: []contract.Message{{
			MessageID: "m-1", Position: 0, Role: contract.RoleUser, CreatedAt: at,
			Parts: []contract.Part{{Type: contract.PartText, Text: "I moved to Denver."}},
		}},
		SentAt: at,
	}
}

func TestTurnEventValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(e *contract.TurnEvent)
		wantErr string // "" means valid
	}{
		{"a complete text turn is valid", func(e *contract.TurnEvent) {}, ""},
		{"a heartbeat without messages is valid", func(e *contract.TurnEvent) {
			e.Turn.IsHeartbeat = true
			e.Messages = nil
		}, ""},
		{"every role is accepted", func(e *contract.TurnEvent) {
			for i, r := range []string{contract.RoleUser, contract.RoleAssistant, contract.RoleTool, contract.RoleSystem} {
				m := e.Messages[0]
				m.MessageID, m.Position, m.Role = "m-"+r, i, r
				e.Messages = append(e.Messages, m)
			}
		}, ""},
		{"every part type is accepted", func(e *contract.TurnEvent) {
			e.Messages[0].Parts = []contract.Part{
				{Type: contract.PartText, Text: "look"},
				{Type: contract.PartImage, Caption: "a whiteboard"},
				{Type: contract.PartToolCall, ID: "c1", Name: "f", Arguments: "{}"},
				{Type: contract.PartToolResult, ToolCallID: "c1", Output: "ok"},
			}
		}, ""},
		{"version 2 is refused", func(e *contract.TurnEvent) { e.V = 2 }, "v must be 1"},
		{"missing v is refused", func(e *contract.TurnEvent) { e.V = 0 }, "v must be 1"},
		{"missing event_id", func(e *contract.TurnEvent) { e.EventID = "" }, "event_id is required"},
		{"missing account_id", func(e *contract.TurnEvent) { e.AccountID = "" }, "account_id is required"},
		{"missing user_id", func(e *contract.TurnEvent) { e.UserID = "" }, "user_id is required"},
		{"missing session_id", func(e *contract.TurnEvent) { e.SessionID = "" }, "session_id is required"},
		{"missing source", func(e *contract.TurnEvent) { e.Source = "" }, "source is required"},
		{"no messages on a normal turn", func(e *contract.TurnEvent) { e.Messages = nil }, "messages must not be empty"},
		{"missing message_id", func(e *contract.TurnEvent) { e.Messages[0].MessageID = "" }, "messages[0]: invalid payload: message_id is required"},
		{"unknown role", func(e *contract.TurnEvent) { e.Messages[0].Role = "moderator" }, `unknown role "moderator"`},
		{"message without parts", func(e *contract.TurnEvent) { e.Messages[0].Parts = nil }, "parts must not be empty"},
		{"unknown part type", func(e *contract.TurnEvent) {
			e.Messages[0].Parts = append(e.Messages[0].Parts, contract.Part{Type: "audio"})
		}, `parts[1]: unknown type "audio"`},
		{"invalid UTF-8 in text", func(e *contract.TurnEvent) { e.Messages[0].Parts[0].Text = "bad \xff byte" }, "not valid UTF-8"},
		{"invalid UTF-8 in tool output", func(e *contract.TurnEvent) {
			e.Messages[0].Parts = []contract.Part{{Type: contract.PartToolResult, ToolCallID: "c", Output: "\xc3\x28"}}
		}, "not valid UTF-8"},
		{"invalid UTF-8 in speaker name", func(e *contract.TurnEvent) { e.Messages[0].Name = "\xff" }, "name is not valid UTF-8"},
		{"a message of exactly 256 KiB is accepted", func(e *contract.TurnEvent) {
			e.Messages[0].Parts[0].Text = strings.Repeat("a", contract.MaxMessageBytes)
		}, ""},
		{"a message over 256 KiB is refused", func(e *contract.TurnEvent) {
			e.Messages[0].Parts = []contract.Part{
				{Type: contract.PartText, Text: strings.Repeat("a", contract.MaxMessageBytes/2)},
				{Type: contract.PartToolResult, ToolCallID: "c", Output: strings.Repeat("b", contract.MaxMessageBytes/2+1)},
			}
		}, "over the 262144-byte limit"},
		{"the second message is checked too", func(e *contract.TurnEvent) {
			m := e.Messages[0]
			m.MessageID, m.Position, m.Role = "m-2", 1, "bot"
			e.Messages = append(e.Messages, m)
		}, "messages[1]:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := validTurn()
			tt.mutate(&e)
			err := e.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want error containing %q", tt.wantErr)
			}
			if !errors.Is(err, contract.ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid (callers dead-letter on it)", err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Validate() = %q, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestTurnEventValidateDoesNotMutate(t *testing.T) {
	e := validTurn()
	e.Messages[0].Role = "moderator"
	_ = e.Validate()
	if e.Messages[0].Role != "moderator" || e.EventID != "adv-1" {
		t.Fatalf("Validate mutated the event: %+v", e)
	}
}

func TestMessageText(t *testing.T) {
	tests := []struct {
		name  string
		parts []contract.Part
		want  string
	}{
		{"one text part is the text", []contract.Part{{Type: contract.PartText, Text: "hello"}}, "hello"},
		{"parts are joined by newlines", []contract.Part{
			{Type: contract.PartText, Text: "first"}, {Type: contract.PartText, Text: "second"},
		}, "first\nsecond"},
		{"image caption is kept", []contract.Part{
			{Type: contract.PartText, Text: "see this"}, {Type: contract.PartImage, Caption: "a red bike", URL: "https://x/y.jpg"},
		}, "see this\n[image: a red bike]"},
		{"image without caption renders nothing", []contract.Part{
			{Type: contract.PartImage, URL: "https://x/y.jpg"}, {Type: contract.PartText, Text: "after"},
		}, "after"},
		{"tool call renders name and arguments", []contract.Part{
			{Type: contract.PartToolCall, ID: "c1", Name: "weather", Arguments: `{"city":"Denver"}`},
		}, `[tool call weather({"city":"Denver"})]`},
		{"tool result renders name and output", []contract.Part{
			{Type: contract.PartToolResult, ToolCallID: "c1", Name: "weather", Output: "snow"},
		}, "[tool weather result: snow]"},
		{"failed tool result says error", []contract.Part{
			{Type: contract.PartToolResult, ToolCallID: "c1", Name: "calendar", Output: "unavailable", IsError: true},
		}, "[tool calendar error: unavailable]"},
		{"empty text parts are skipped", []contract.Part{
			{Type: contract.PartText}, {Type: contract.PartText, Text: "only"},
		}, "only"},
		{"unknown part types are skipped", []contract.Part{
			{Type: "audio", URL: "x"}, {Type: contract.PartText, Text: "kept"},
		}, "kept"},
		{"no parts is empty", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := contract.Message{Parts: tt.parts}
			if got := m.Text(); got != tt.want {
				t.Errorf("Text() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestMemoryRecordValidate(t *testing.T) {
	at := time.Date(2025, 3, 14, 16, 2, 20, 0, time.UTC)
	valid := func() contract.MemoryRecord {
		return contract.MemoryRecord{V: 1, ID: "5d0c9a8e-3b7f-5e21-9a44-1c2d3e4f5a6b", AccountID: "acme", UserID: "u-alice", Scope: "user",
			Category: "profile", Polarity: 1, Text: "Alice lives in Denver.", Importance: 0.8,
			Sources: []contract.MemorySource{{SessionID: "s1", MessageID: "m1"}}, ValidFrom: at, CreatedAt: at, UpdatedAt: at}
	}
	tests := []struct {
		name    string
		mutate  func(r *contract.MemoryRecord)
		wantErr string // "" means valid
	}{
		{"an exported user memory is valid", func(*contract.MemoryRecord) {}, ""},
		{"an agent memory with its agent is valid", func(r *contract.MemoryRecord) { r.Scope, r.AgentID = "agent", "main" }, ""},
		{"a memory without sources is valid", func(r *contract.MemoryRecord) { r.Sources = nil }, ""},
		{"version 2 is refused", func(r *contract.MemoryRecord) { r.V = 2 }, "v must be 1"},
		{"an id is required", func(r *contract.MemoryRecord) { r.ID = "" }, "id is required"},
		{"the archive scope is not a memory's", func(r *contract.MemoryRecord) { r.Scope = "archive" }, "scope must be user or agent"},
		{"an agent memory names its agent", func(r *contract.MemoryRecord) { r.Scope = "agent" }, "agent_id is required"},
		{"a category is required", func(r *contract.MemoryRecord) { r.Category = "" }, "category is required"},
		{"a text is required", func(r *contract.MemoryRecord) { r.Text = "" }, "text is required"},
		{"a text over 8000 characters is refused", func(r *contract.MemoryRecord) { r.Text = strings.Repeat("é", 8001) }, "over 8000"},
		{"polarity is 1 or -1", func(r *contract.MemoryRecord) { r.Polarity = 0 }, "polarity"},
		{"importance is 0–1", func(r *contract.MemoryRecord) { r.Importance = 1.5 }, "importance"},
		{"created_at is required", func(r *contract.MemoryRecord) { r.CreatedAt = time.Time{} }, "created_at"},
		{"a source names its session and message", func(r *contract.MemoryRecord) {
			r.Sources = append(r.Sources, contract.MemorySource{SessionID: "s1"})
		}, "sources[1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := valid()
			tt.mutate(&r)
			err := r.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, contract.ErrInvalid) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate() = %v, want ErrInvalid containing %q", err, tt.wantErr)
			}
		})
	}
}
