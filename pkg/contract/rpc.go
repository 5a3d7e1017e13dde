package contract

import "time"

// RPCError is the error body every RPC endpoint answers with (alongside the micro error
// headers), so HTTP can map it to a status.
type RPCError struct {
	V     int    `json:"v"`
	Error string `json:"error"`
	Code  string `json:"code"` // bad_request | not_found | unavailable | internal
}

// MemoriesListRequest is the body of <p>.rpc.<account>.memories.list.
type MemoriesListRequest struct {
	V        int    `json:"v"`
	UserID   string `json:"user_id"`
	AgentID  string `json:"agent_id,omitempty"`
	Scope    string `json:"scope,omitempty"`
	Category string `json:"category,omitempty"`
	Limit    int    `json:"limit,omitempty"`
	// Since and Until bound the memories' created_at (since ≤ created_at < until); nil: open.
	Since *time.Time `json:"since,omitempty"`
	Until *time.Time `json:"until,omitempty"`
	// Cursor continues a listing: the NextCursor of the previous page, unchanged ("" for the
	// first page). Pages follow created_at, then id, newest first.
	Cursor string `json:"cursor,omitempty"`
}

// MemoryGetRequest is the body of memories.get and memories.forget.
type MemoryGetRequest struct {
	V        int    `json:"v"`
	UserID   string `json:"user_id"`
	MemoryID string `json:"memory_id"`
}

// MemoriesListResponse answers memories.list (items have no score).
type MemoriesListResponse struct {
	V     int          `json:"v"`
	Items []RecallItem `json:"items"`
	// NextCursor fetches the next page; empty on the last page.
	NextCursor string `json:"next_cursor,omitempty"`
}

// SessionMetaRequest is the body of <p>.rpc.<account>.session.get.
type SessionMetaRequest struct {
	V         int    `json:"v"`
	UserID    string `json:"user_id"`
	SessionID string `json:"session_id"`
}

// SessionMeta answers GET /v1/sessions/{id}.
type SessionMeta struct {
	V             int            `json:"v"`
	SessionID     string         `json:"session_id"`
	MessageCount  int            `json:"message_count"`
	PendingTokens int            `json:"pending_tokens"`
	CommitCount   int            `json:"commit_count"`
	Memories      map[string]int `json:"memories"`
}
