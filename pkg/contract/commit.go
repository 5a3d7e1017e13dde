package contract

import "time"

// Commit kinds.
const (
	CommitAuto    = "auto"
	CommitSync    = "sync"
	CommitStore   = "store"
	CommitCompact = "compact"
	// CommitIdle archives everything a session holds once it has had no new turn for the idle
	// interval (ingest's idle sweep), so a short chat still becomes long-term memory.
	CommitIdle = "idle"
)

// CommitRequest asks extract to archive a session up to Upto (a seq). Published to
// <p>.commits.<account>.<session> through the outbox, Nats-Msg-Id = RequestID.
type CommitRequest struct {
	V          int       `json:"v"`
	RequestID  string    `json:"request_id"`
	AccountID  string    `json:"account_id"`
	UserID     string    `json:"user_id"`
	AgentID    string    `json:"agent_id,omitempty"`
	SessionID  string    `json:"session_id"`
	Kind       string    `json:"kind"`
	Upto       int64     `json:"upto"`
	KeepRecent *int      `json:"keep_recent,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
}

// Commit statuses and reasons (docs/design.md §11).
const (
	StatusCompleted = "completed"
	StatusAccepted  = "accepted"
	StatusSkipped   = "skipped"
	StatusTimeout   = "timeout"
	StatusFailed    = "failed"

	ReasonNoMessages      = "no_messages"
	ReasonCommitNoArchive = "commit_no_archive"
	ReasonTimeout         = "timeout"
	ReasonFailed          = "failed"
)

// CommitResult answers a synchronous commit (RPC and HTTP).
type CommitResult struct {
	V            int            `json:"v"`
	OK           bool           `json:"ok"`
	Status       string         `json:"status"`
	Compacted    bool           `json:"compacted"`
	Reason       string         `json:"reason,omitempty"`
	ArchiveID    string         `json:"archive_id,omitempty"`
	Memories     map[string]int `json:"memories"`
	Summary      string         `json:"summary,omitempty"`
	TokensBefore int            `json:"tokens_before"`
	TokensAfter  int            `json:"tokens_after"`
}

// DefaultCommitTimeout is how long a synchronous commit waits for its commit_completed event
// when the request names no timeout_ms (extract's default; the gateway's for HTTP).
const DefaultCommitTimeout = 60 * time.Second

// CommitRPCRequest is the body of <p>.rpc.<account>.commit.
type CommitRPCRequest struct {
	V          int    `json:"v"`
	RequestID  string `json:"request_id"`
	UserID     string `json:"user_id"`
	AgentID    string `json:"agent_id,omitempty"`
	SessionID  string `json:"session_id"`
	Kind       string `json:"kind"`
	Wait       bool   `json:"wait"`
	KeepRecent *int   `json:"keep_recent,omitempty"`
	TimeoutMS  int    `json:"timeout_ms,omitempty"`
}
