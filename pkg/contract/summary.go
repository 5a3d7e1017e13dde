package contract

import "time"

// SummaryRequest is the body of <p>.rpc.<account>.summary and GET /v1/summaries (docs/design.md §6
// "Tools": memory_summary): the digest of a user (or of one of their agents) for the day, ISO
// week or month that contains Date. Served by the summarizer, which owns the digests.
type SummaryRequest struct {
	V       int    `json:"v"`
	UserID  string `json:"user_id"`
	AgentID string `json:"agent_id,omitempty"` // the agent's digest; omitted: the user's
	Period  string `json:"period"`             // day | week | month
	Date    string `json:"date"`               // YYYY-MM-DD, in the deployment's time zone (MEMBUS_TZ)
}

// SummaryResponse is one digest. A missing digest is answered with RPCError code not_found.
type SummaryResponse struct {
	V         int       `json:"v"`
	Period    string    `json:"period"`
	Bucket    string    `json:"bucket"` // 2026-11-30 | 2026-W49 | 2026-11
	Text      string    `json:"text"`
	CreatedAt time.Time `json:"created_at"`
}
