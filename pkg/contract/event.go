package contract

import "time"

// Event kinds of docs/design.md §2.8; the subject is <p>.events.<kind>.<account>.<session>.
const (
	EventArchiveCreated   = "archive_created"
	EventCommitCompleted  = "commit_completed"
	EventMemoryUpserted   = "memory_upserted"
	EventMemorySuperseded = "memory_superseded"
	EventMemoryDeleted    = "memory_deleted"
	EventSummaryCreated   = "summary_created"
	// EventErased: a user (SessionID empty) or one session of theirs was erased; copies
	// outside SQL (a recall replica's local index) are dropped.
	EventErased = "erased"
)

// EventKinds lists every kind, in the order of docs/design.md §2.8.
var EventKinds = []string{EventArchiveCreated, EventCommitCompleted, EventMemoryUpserted,
	EventMemorySuperseded, EventMemoryDeleted, EventSummaryCreated, EventErased}

// Event is the one envelope every event kind shares. Events carry ids, never user text.
// Fields that do not apply to a kind are omitted; the schema of each kind says which are required.
type Event struct {
	V         int       `json:"v"`
	EventID   string    `json:"event_id"`
	Kind      string    `json:"kind"`
	AccountID string    `json:"account_id"`
	UserID    string    `json:"user_id"`
	AgentID   string    `json:"agent_id,omitempty"`
	SessionID string    `json:"session_id"`
	At        time.Time `json:"at"`

	// archive_created, commit_completed
	ArchiveID string `json:"archive_id,omitempty"`
	FromSeq   int64  `json:"from_seq,omitempty"`
	ToSeq     int64  `json:"to_seq,omitempty"`
	// commit_completed
	RequestID    string         `json:"request_id,omitempty"`
	Status       string         `json:"status,omitempty"`
	Reason       string         `json:"reason,omitempty"`
	Memories     map[string]int `json:"memories,omitempty"`
	TokensBefore int            `json:"tokens_before,omitempty"`
	TokensAfter  int            `json:"tokens_after,omitempty"`
	// memory_upserted, memory_superseded, memory_deleted
	MemoryID     string `json:"memory_id,omitempty"`
	Category     string `json:"category,omitempty"`
	SupersededBy string `json:"superseded_by,omitempty"`
	// summary_created
	SummaryID string `json:"summary_id,omitempty"`
	Period    string `json:"period,omitempty"`
	Bucket    string `json:"bucket,omitempty"`
}
