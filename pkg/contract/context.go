package contract

// ContextRequest is the body of <p>.rpc.<account>.context and
// GET /v1/sessions/{id}/context?token_budget=N.
type ContextRequest struct {
	V           int    `json:"v"`
	UserID      string `json:"user_id"`
	AgentID     string `json:"agent_id,omitempty"`
	SessionID   string `json:"session_id"`
	TokenBudget int    `json:"token_budget"`
}

// ContextMessage is one message of an assembled context, in the host's shape.
type ContextMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	Name    string `json:"name,omitempty"`
	Seq     int64  `json:"seq,omitempty"`
}

// ArchiveIndexEntry names an archive and its one-line abstract.
type ArchiveIndexEntry struct {
	ArchiveID string `json:"archive_id"`
	FromSeq   int64  `json:"from_seq"`
	ToSeq     int64  `json:"to_seq"`
	Abstract  string `json:"abstract"`
}

// ContextResponse is the assembled context (docs/design.md §6, §11).
type ContextResponse struct {
	V                    int                 `json:"v"`
	Messages             []ContextMessage    `json:"messages"`
	Summary              string              `json:"summary"`
	ArchiveIndex         []ArchiveIndexEntry `json:"archive_index"`
	SystemPromptAddition string              `json:"system_prompt_addition"`
	EstimatedTokens      int                 `json:"estimated_tokens"`
}
