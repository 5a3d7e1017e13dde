package request

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
)

// MaxIdempotencyKeyLen is the schemas' event_id maxLength (also external_id's).
const MaxIdempotencyKeyLen = 256

// MaxUserIDLen is the longest user id accepted (the schemas' user_id maxLength; also a
// message's name).
const MaxUserIDLen = 256

// Messages is the body of POST /v1/sessions/{session_id}/messages.
type Messages struct {
	AgentID              string    `json:"agent_id"`
	Messages             []Message `json:"messages"`
	CommitTokenThreshold *int      `json:"commit_token_threshold"`
	KeepRecent           *int      `json:"keep_recent"`
}

// Message is one posted message: content is a string or an array of parts.
type Message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ExternalID string          `json:"external_id"`
	CreatedAt  *time.Time      `json:"created_at"`
}

// Normalise turns one posted message into a contract.Message: string content becomes one
// text part, position is the index, created_at defaults to now (UTC), message_id is
// external_id or derived from base and the position.
func Normalise(in Message, pos int, base string, now time.Time) (contract.Message, *Error) {
	where := fmt.Sprintf("messages[%d]", pos)
	switch in.Role {
	case contract.RoleUser, contract.RoleAssistant, contract.RoleTool:
	default:
		return contract.Message{}, BadRequest(fmt.Sprintf("%s: role must be user, assistant or tool, got %q", where, in.Role))
	}
	parts, rerr := parseContent(in.Content, where)
	if rerr != nil {
		return contract.Message{}, rerr
	}
	m := contract.Message{MessageID: in.ExternalID, Position: pos, Role: in.Role, Parts: parts, Name: in.Name, CreatedAt: now}
	if size := messageSize(m); size > contract.MaxMessageBytes {
		return contract.Message{}, TooLarge(fmt.Sprintf("%s is %d bytes, over the %d-byte limit of one message", where, size, contract.MaxMessageBytes))
	}
	if len(in.ExternalID) > MaxIdempotencyKeyLen {
		return contract.Message{}, BadRequest(fmt.Sprintf("%s: external_id must be at most %d bytes", where, MaxIdempotencyKeyLen))
	}
	if len(in.Name) > MaxUserIDLen {
		return contract.Message{}, BadRequest(fmt.Sprintf("%s: name must be at most %d bytes", where, MaxUserIDLen))
	}
	if m.MessageID == "" {
		m.MessageID = bus.MsgID("http-message", base, strconv.Itoa(pos))
	}
	if in.CreatedAt != nil && !in.CreatedAt.IsZero() {
		m.CreatedAt = in.CreatedAt.UTC()
	}
	return m, nil
}

// parseContent accepts a string (one text part) or an array of parts.
func parseContent(raw json.RawMessage, where string) ([]contract.Part, *Error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || bytes.Equal(raw, []byte("null")):
		return nil, BadRequest(where + ": content is required")
	case raw[0] == '"':
		var text string
		if err := json.Unmarshal(raw, &text); err != nil {
			return nil, BadRequest(where + ": content: " + err.Error())
		}
		if text == "" {
			return nil, BadRequest(where + ": content must not be empty")
		}
		return []contract.Part{{Type: contract.PartText, Text: text}}, nil
	case raw[0] == '[':
		var parts []contract.Part
		if err := json.Unmarshal(raw, &parts); err != nil {
			return nil, BadRequest(where + ": content parts: " + err.Error())
		}
		for j, p := range parts {
			if p.Type == contract.PartText && p.Text == "" {
				return nil, BadRequest(fmt.Sprintf("%s: parts[%d]: text must not be empty", where, j))
			}
		}
		return parts, nil
	default:
		return nil, BadRequest(where + ": content must be a string or an array of parts")
	}
}

// messageSize counts a message's text the way contract validation does (docs/design.md §2: one
// message ≤ 256 KiB).
func messageSize(m contract.Message) int {
	size := 0
	for _, p := range m.Parts {
		size += len(p.Text) + len(p.Caption) + len(p.URL) + len(p.ID) + len(p.Name) +
			len(p.Arguments) + len(p.ToolCallID) + len(p.Output)
	}
	return size
}
