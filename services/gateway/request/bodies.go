package request

// Commit is the body of POST /v1/sessions/{session_id}/commit.
type Commit struct {
	Wait       *bool  `json:"wait"` // default true
	KeepRecent *int   `json:"keep_recent"`
	TimeoutMS  *int   `json:"timeout_ms"`
	AgentID    string `json:"agent_id"`
}

// Store is the body of POST /v1/memories.
type Store struct {
	Text      string `json:"text"`
	AgentID   string `json:"agent_id"`
	TimeoutMS *int   `json:"timeout_ms"`
}

// Forget is the body of POST /v1/memories/forget.
type Forget struct {
	Query   string `json:"query"`
	AgentID string `json:"agent_id"`
}
