package contract

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// ErrInvalid marks a payload that can never be handled; callers dead-letter it.
var ErrInvalid = errors.New("invalid payload")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// Validate checks the rules the schema states that a Go decoder cannot: required fields,
// enums, sizes and UTF-8. It never mutates the event.
func (e *TurnEvent) Validate() error {
	switch {
	case e.V != Version:
		return invalid("v must be %d, got %d", Version, e.V)
	case e.EventID == "":
		return invalid("event_id is required")
	case e.AccountID == "":
		return invalid("account_id is required")
	case e.UserID == "":
		return invalid("user_id is required")
	case e.SessionID == "":
		return invalid("session_id is required")
	case e.Source == "":
		return invalid("source is required")
	case len(e.Messages) == 0 && !e.Turn.IsHeartbeat:
		return invalid("messages must not be empty")
	}
	for i, m := range e.Messages {
		if err := m.validate(); err != nil {
			return fmt.Errorf("messages[%d]: %w", i, err)
		}
	}
	return nil
}

func (m *Message) validate() error {
	if m.MessageID == "" {
		return invalid("message_id is required")
	}
	switch m.Role {
	case RoleUser, RoleAssistant, RoleTool, RoleSystem:
	default:
		return invalid("unknown role %q", m.Role)
	}
	if len(m.Parts) == 0 {
		return invalid("parts must not be empty")
	}
	size := 0
	for j, p := range m.Parts {
		switch p.Type {
		case PartText, PartImage, PartToolCall, PartToolResult:
		default:
			return invalid("parts[%d]: unknown type %q", j, p.Type)
		}
		for _, s := range []string{p.Text, p.Caption, p.URL, p.ID, p.Name, p.Arguments, p.ToolCallID, p.Output} {
			if !utf8.ValidString(s) {
				return invalid("parts[%d]: text is not valid UTF-8", j)
			}
			size += len(s)
		}
	}
	if !utf8.ValidString(m.Name) {
		return invalid("name is not valid UTF-8")
	}
	if size > MaxMessageBytes {
		return invalid("message is %d bytes, over the %d-byte limit", size, MaxMessageBytes)
	}
	return nil
}

// Text renders a message's parts as the capture text (docs/design.md §6: tool calls and results are
// rendered, image captions kept).
func (m *Message) Text() string {
	out := ""
	for _, p := range m.Parts {
		var s string
		switch p.Type {
		case PartText:
			s = p.Text
		case PartImage:
			if p.Caption != "" {
				s = "[image: " + p.Caption + "]"
			}
		case PartToolCall:
			s = fmt.Sprintf("[tool call %s(%s)]", p.Name, p.Arguments)
		case PartToolResult:
			status := "result"
			if p.IsError {
				status = "error"
			}
			s = fmt.Sprintf("[tool %s %s: %s]", p.Name, status, p.Output)
		}
		if s == "" {
			continue
		}
		if out != "" {
			out += "\n"
		}
		out += s
	}
	return out
}

// Validate checks a CommitRequest.
func (c *CommitRequest) Validate() error {
	switch {
	case c.V != Version:
		return invalid("v must be %d, got %d", Version, c.V)
	case c.RequestID == "":
		return invalid("request_id is required")
	case c.AccountID == "" || c.SessionID == "" || c.UserID == "":
		return invalid("account_id, user_id and session_id are required")
	}
	switch c.Kind {
	case CommitAuto, CommitSync, CommitStore, CommitCompact, CommitIdle:
	default:
		return invalid("unknown kind %q", c.Kind)
	}
	return nil
}
