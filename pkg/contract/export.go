package contract

import (
	"time"
	"unicode/utf8"
)

// MaxImportBatch is the most memories one memories.import request carries; `membus import`
// sends a file in batches of this size, so one request stays well under the NATS payload limit.
const MaxImportBatch = 100

// MaxMemoryTextChars bounds the text of an imported memory (what POST /v1/memories accepts).
const MaxMemoryTextChars = 8000

// MemoryRecord is one memory with every field needed to restore it: a line of the JSON Lines
// `membus export` writes and `membus import` reads, an item of memories.export and of
// memories.import. AccountID and UserID say whose export it was; an import into another
// account or user derives the memory's id for the new owner.
type MemoryRecord struct {
	V          int            `json:"v"`
	ID         string         `json:"id"`
	AccountID  string         `json:"account_id"`
	UserID     string         `json:"user_id"`
	AgentID    string         `json:"agent_id,omitempty"` // set for agent-scoped memories
	Scope      string         `json:"scope"`
	Category   string         `json:"category"`
	Subject    string         `json:"subject,omitempty"`
	Attribute  string         `json:"attribute,omitempty"`
	Polarity   int            `json:"polarity"`
	Value      string         `json:"value,omitempty"`
	Abstract   string         `json:"abstract,omitempty"`
	Text       string         `json:"text"`
	Importance float64        `json:"importance"`
	Sources    []MemorySource `json:"sources"`
	EventTime  *time.Time     `json:"event_time,omitempty"`
	ValidFrom  time.Time      `json:"valid_from"`
	CreatedAt  time.Time      `json:"created_at"`
	UpdatedAt  time.Time      `json:"updated_at"`
}

// MemorySource is one message a memory was stated in (its provenance).
type MemorySource struct {
	SessionID string `json:"session_id"`
	MessageID string `json:"message_id"`
}

// Validate checks what an import relies on (the schema memory_record.schema.json says the
// same); the category is checked by the service that owns the list.
func (r *MemoryRecord) Validate() error {
	switch {
	case r.V != Version:
		return invalid("v must be %d", Version)
	case r.ID == "":
		return invalid("id is required")
	case r.Scope != ScopeUser && r.Scope != ScopeAgent:
		return invalid("scope must be user or agent, not %q", r.Scope)
	case r.Scope == ScopeAgent && r.AgentID == "":
		return invalid("agent_id is required for an agent-scoped memory")
	case r.Category == "":
		return invalid("category is required")
	case r.Text == "":
		return invalid("text is required")
	case utf8.RuneCountInString(r.Text) > MaxMemoryTextChars:
		return invalid("text is over %d characters", MaxMemoryTextChars)
	case r.Polarity != 1 && r.Polarity != -1:
		return invalid("polarity must be 1 or -1")
	case r.Importance < 0 || r.Importance > 1:
		return invalid("importance must be 0–1")
	case r.CreatedAt.IsZero():
		return invalid("created_at is required")
	}
	for i, s := range r.Sources {
		if s.SessionID == "" || s.MessageID == "" {
			return invalid("sources[%d]: session_id and message_id are required", i)
		}
	}
	return nil
}

// MemoriesExportResponse answers memories.export (served by recall; the request is a
// MemoriesListRequest): one page of a user's active memories as full records, digests left
// out (the summarizer derives them), in the order and with the cursor of memories.list.
type MemoriesExportResponse struct {
	V          int            `json:"v"`
	Items      []MemoryRecord `json:"items"`
	NextCursor string         `json:"next_cursor,omitempty"`
}

// MemoriesImportRequest is the body of <p>.rpc.<account>.memories.import (served by extract):
// at most MaxImportBatch records restored into the subject's account and UserID.
type MemoriesImportRequest struct {
	V        int            `json:"v"`
	UserID   string         `json:"user_id"`
	Memories []MemoryRecord `json:"memories"`
}

// MemoriesImportResponse answers memories.import: how many records became new memories, added
// sources to a memory the user held, changed nothing, or were not restored because every
// source is in an erased session. IDs are the memories the records are now, in request order.
type MemoriesImportResponse struct {
	V         int      `json:"v"`
	Created   int      `json:"created"`
	Merged    int      `json:"merged"`
	Unchanged int      `json:"unchanged"`
	Erased    int      `json:"erased"`
	IDs       []string `json:"ids"`
}
