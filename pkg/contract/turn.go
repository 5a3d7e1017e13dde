package contract

import (
	"fmt"
	"time"
)

// Roles a message may have.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
	RoleSystem    = "system"
)

// Part types.
const (
	PartText       = "text"
	PartImage      = "image"
	PartToolCall   = "tool_call"
	PartToolResult = "tool_result"
)

// Limits of docs/design.md §2.
const (
	MaxMessageBytes         = 256 << 10
	MinCommitTokenThreshold = 2000
	MaxCommitTokenThreshold = 200000
	// DefaultCommitTokenThreshold is the threshold of a session that sets none (docs/design.md §6).
	DefaultCommitTokenThreshold = 20000
	// DefaultKeepRecent is how many newest messages an automatic commit leaves active.
	DefaultKeepRecent = 10
	// MaxKeepRecent is the schemas' keep_recent maximum: what the hot cache holds
	// (session.HotMessages).
	MaxKeepRecent = 200
)

// CheckCommitTokenThreshold is the rule of a configured commit token threshold, which a
// TurnEvent's own threshold is clamped to instead. The configuration and ingest both apply it;
// the error names no key, the caller does.
func CheckCommitTokenThreshold(n int) error {
	if n < MinCommitTokenThreshold || n > MaxCommitTokenThreshold {
		return fmt.Errorf("must be between %d and %d, got %d", MinCommitTokenThreshold, MaxCommitTokenThreshold, n)
	}
	return nil
}

// CheckKeepRecent is the rule of a configured keep_recent (0–MaxKeepRecent).
func CheckKeepRecent(n int) error {
	if n < 0 || n > MaxKeepRecent {
		return fmt.Errorf("must be between 0 and %d (the hot cache holds %d), got %d", MaxKeepRecent, MaxKeepRecent, n)
	}
	return nil
}

// TurnEvent is one finished turn, published to <p>.turns.<account>.<session> with
// Nats-Msg-Id = EventID.
type TurnEvent struct {
	V          int       `json:"v"`
	EventID    string    `json:"event_id"`
	AccountID  string    `json:"account_id"`
	UserID     string    `json:"user_id"`
	AgentID    string    `json:"agent_id"`
	SessionID  string    `json:"session_id"`
	SessionKey string    `json:"session_key,omitempty"`
	Source     string    `json:"source"`
	Turn       TurnInfo  `json:"turn"`
	Messages   []Message `json:"messages"`
	SentAt     time.Time `json:"sent_at"`
}

// TurnInfo carries the host's view of the turn.
type TurnInfo struct {
	PrePromptMessageCount *int `json:"pre_prompt_message_count,omitempty"`
	IsHeartbeat           bool `json:"is_heartbeat"`
	TokenBudget           *int `json:"token_budget,omitempty"`
	CommitTokenThreshold  *int `json:"commit_token_threshold,omitempty"`
	KeepRecent            *int `json:"keep_recent,omitempty"`
}

// Message is one message of a turn. MessageID is stable for the life of the message.
type Message struct {
	MessageID string    `json:"message_id"`
	Position  int       `json:"position"`
	Role      string    `json:"role"`
	Parts     []Part    `json:"parts"`
	Name      string    `json:"name,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// Part is one piece of a message; Type selects which fields apply.
type Part struct {
	Type string `json:"type"`
	// text
	Text string `json:"text,omitempty"`
	// image
	Caption string `json:"caption,omitempty"`
	URL     string `json:"url,omitempty"`
	// tool_call (ID, Name, Arguments) and tool_result (ToolCallID, Name, Output, IsError)
	ID         string `json:"id,omitempty"`
	Name       string `json:"name,omitempty"`
	Arguments  string `json:"arguments,omitempty"`
	ToolCallID string `json:"tool_call_id,omitempty"`
	Output     string `json:"output,omitempty"`
	IsError    bool   `json:"is_error,omitempty"`
}
