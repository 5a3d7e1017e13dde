package contract

import "time"

// ArchiveSearchRequest is the body of <p>.rpc.<account>.archive.search and
// GET /v1/sessions/{session_id}/archives/search?q= (docs/design.md §6 "Tools": archive_search): a
// case-insensitive keyword search over one session's archived messages.
type ArchiveSearchRequest struct {
	V         int    `json:"v"`
	UserID    string `json:"user_id"`
	SessionID string `json:"session_id"`
	Query     string `json:"query"`
	Limit     int    `json:"limit,omitempty"` // matching messages; default 20, at most 200
}

// ArchiveSearchResponse lists the archives with matching messages, in seq order.
type ArchiveSearchResponse struct {
	V         int            `json:"v"`
	SessionID string         `json:"session_id"`
	Query     string         `json:"query"`
	Archives  []ArchiveMatch `json:"archives"`
	Truncated bool           `json:"truncated"` // more messages matched than the limit
}

// ArchiveMatch is one archive and its matching messages.
type ArchiveMatch struct {
	ArchiveID string        `json:"archive_id"`
	FromSeq   int64         `json:"from_seq"`
	ToSeq     int64         `json:"to_seq"`
	Abstract  string        `json:"abstract"`
	Matches   []ArchiveLine `json:"matches"`
}

// ArchiveLine is one matching message: the lines of it that match.
type ArchiveLine struct {
	Seq       int64    `json:"seq"`
	MessageID string   `json:"message_id"`
	Role      string   `json:"role"`
	Name      string   `json:"name,omitempty"`
	Lines     []string `json:"lines"`
}

// ArchiveExpandRequest is the body of <p>.rpc.<account>.archive.expand and
// GET /v1/archives/{archive_id} (archive_expand): one archive's messages.
type ArchiveExpandRequest struct {
	V         int    `json:"v"`
	UserID    string `json:"user_id"`
	ArchiveID string `json:"archive_id"`
}

// ArchiveExpandResponse is one archive with its messages in seq order.
type ArchiveExpandResponse struct {
	V         int              `json:"v"`
	ArchiveID string           `json:"archive_id"`
	SessionID string           `json:"session_id"`
	FromSeq   int64            `json:"from_seq"`
	ToSeq     int64            `json:"to_seq"`
	Abstract  string           `json:"abstract"`
	Messages  []ArchiveMessage `json:"messages"`
}

// ArchiveMessage is one archived message.
type ArchiveMessage struct {
	Seq       int64     `json:"seq"`
	MessageID string    `json:"message_id"`
	Role      string    `json:"role"`
	Name      string    `json:"name,omitempty"`
	Content   string    `json:"content"`
	CreatedAt time.Time `json:"created_at"`
}
