package contract

import (
	"fmt"
	"time"
)

// Recall scopes / target types.
const (
	ScopeUser    = "user"
	ScopeAgent   = "agent"
	ScopeArchive = "archive"
)

// ValidScope reports whether s is a recall scope (user, agent or archive).
func ValidScope(s string) bool { return s == ScopeUser || s == ScopeAgent || s == ScopeArchive }

// Score fusion methods of recall (MEMBUS_RECALL_FUSION).
const (
	FusionWeighted = "weighted" // 0.7 dense + 0.3 keyword (default)
	FusionRRF      = "rrf"      // reciprocal rank fusion, k 60, scaled to [0,1]
	// FusionDense scores by the dense cosine alone, without keyword score or boosts: not for
	// serving, but to measure what the embedder contributes (membus eval locomo --fusion dense).
	FusionDense = "dense"
)

// DefaultRecallCandidates is how many candidates recall takes from each side (dense and
// keyword) of each scope (SPEC); MaxRecallCandidates bounds the setting
// (MEMBUS_RECALL_CANDIDATES): each scope reads the memory rows of its candidates from SQL.
const (
	DefaultRecallCandidates = 24
	MaxRecallCandidates     = 200
)

// CheckRecallCandidates is the rule of a candidates-a-side setting; the configuration and the
// eval and bench flags apply it, and the error names no key: the caller does.
func CheckRecallCandidates(n int) error {
	if n < 1 || n > MaxRecallCandidates {
		return fmt.Errorf("must be between 1 and %d, got %d", MaxRecallCandidates, n)
	}
	return nil
}

// ValidFusion reports whether s is a fusion method.
func ValidFusion(s string) bool { return s == FusionWeighted || s == FusionRRF || s == FusionDense }

// Item kinds.
const (
	KindMemory  = "memory"
	KindArchive = "archive"
	KindDigest  = "digest"
)

// RecallRequest is the body of <p>.rpc.<account>.recall and POST /v1/recall (docs/design.md §6).
// Zero values mean "the default".
type RecallRequest struct {
	V                int        `json:"v"`
	UserID           string     `json:"user_id"`
	AgentID          string     `json:"agent_id,omitempty"`
	SessionID        string     `json:"session_id,omitempty"`
	Query            string     `json:"query"`
	Limit            int        `json:"limit,omitempty"`
	Scopes           []string   `json:"scopes,omitempty"`
	TargetTypes      []string   `json:"target_types,omitempty"` // OpenViking's name for Scopes; both are honoured
	ScoreThreshold   *float64   `json:"score_threshold,omitempty"`
	MaxInjectedChars int        `json:"max_injected_chars,omitempty"`
	PreferAbstract   bool       `json:"prefer_abstract,omitempty"`
	Now              *time.Time `json:"now,omitempty"`
	Trace            bool       `json:"trace,omitempty"`
}

// ScoreParts explains a fused score.
type ScoreParts struct {
	Dense   float64 `json:"dense"`
	Keyword float64 `json:"keyword"`
	Fused   float64 `json:"fused"`
	Boost   float64 `json:"boost"`
	Decay   float64 `json:"decay,omitempty"`
}

// RecallItem is one recalled memory, archive message or digest.
type RecallItem struct {
	ID        string      `json:"id"`
	Kind      string      `json:"kind"`
	Scope     string      `json:"scope"`
	Category  string      `json:"category,omitempty"`
	Score     float64     `json:"score"`
	Parts     *ScoreParts `json:"parts,omitempty"`
	Text      string      `json:"text"`
	Sources   []string    `json:"sources"`
	CreatedAt time.Time   `json:"created_at"`
	EventTime *time.Time  `json:"event_time,omitempty"`
}

// TraceEntry records one candidate and what happened to it.
type TraceEntry struct {
	ID      string     `json:"id"`
	Scope   string     `json:"scope"`
	Score   float64    `json:"score"`
	Parts   ScoreParts `json:"parts"`
	Kept    bool       `json:"kept"`
	Dropped string     `json:"dropped,omitempty"`
	// Sources are the ids of the messages the candidate states (a memory's provenance, an
	// archive item's message), so a trace shows where a message a query needed was lost.
	Sources []string `json:"sources,omitempty"`
}

// RecallResponse answers a RecallRequest.
type RecallResponse struct {
	V        int          `json:"v"`
	Items    []RecallItem `json:"items"`
	Block    string       `json:"block"`
	Degraded bool         `json:"degraded"`
	Embedder string       `json:"embedder,omitempty"`
	Trace    []TraceEntry `json:"trace,omitempty"`
}
