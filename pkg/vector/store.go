// Package vector is the vector store every service searches memories in: the
// Store interface, the local embedded store (cosine + BM25, persisted under
// the data dir; large users searched through int8 codes with exact
// re-scoring, quant.go) and, in vectortest, the conformance suite every
// adapter runs.
package vector

import (
	"context"
	"errors"
	"time"
)

// Sentinel errors. Adapters wrap them; match with errors.Is.
var (
	// ErrNotFound: no point with that id in the caller's tenant (a foreign
	// tenant's point is not found either).
	ErrNotFound = errors.New("vector: not found")
	// ErrModelMismatch: the vectors come from another embedding model than
	// the one stored with the index.
	ErrModelMismatch = errors.New("vector: embedding model mismatch")
	// ErrMissingTenant: a read or write without account and user id. No
	// call ever spans tenants.
	ErrMissingTenant = errors.New("vector: account and user id are required")
	// ErrInvalid: a malformed point or argument (bad id, wrong dimension).
	ErrInvalid = errors.New("vector: invalid argument")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("vector: store closed")
)

// Point is one indexed item (a memory, an archive message, a digest).
type Point struct {
	ID        string // a UUID; adapters return it in canonical lower-case form
	AccountID string
	UserID    string
	AgentID   string // set for agent-scoped items
	Scope     string // user | agent | archive
	Kind      string // memory | archive | digest
	Category  string
	Text      string // the text BM25 indexes
	Vector    []float32
	Payload   map[string]string
	CreatedAt time.Time
}

// Filter narrows a search or scroll to one tenant and, optionally, to some
// agents, scopes, kinds and categories. Empty lists match everything.
type Filter struct {
	AccountID  string // required
	UserID     string // required
	AgentID    string // when set, only points with this agent id
	Scopes     []string
	Kinds      []string
	Categories []string
}

// Hit is one search result. Every hit carries both scores, whichever side
// found it.
type Hit struct {
	ID      string
	Dense   float64 // cosine similarity clamped to [0,1]
	Keyword float64 // raw BM25 score (0 when no query term matches)
	Point   Point
}

// Store is a tenant-partitioned hybrid (dense + keyword) index.
type Store interface {
	// Upsert inserts or replaces points by id. model must equal the
	// index's model id, else ErrModelMismatch.
	Upsert(ctx context.Context, model string, pts []Point) error
	// Delete removes the ids from the tenant; unknown ids are ignored.
	Delete(ctx context.Context, accountID, userID string, ids []string) error
	// Get returns one point of the tenant, or ErrNotFound.
	Get(ctx context.Context, accountID, userID, id string) (Point, error)
	// Search returns the union of the top k by dense cosine and the top k
	// by BM25 over query (k per side, so at most 2k hits), ordered by dense
	// score, then keyword score, then id. A nil vector skips the dense side,
	// an empty query the keyword side. A hit's Point may come without
	// its Vector (the local store leaves it out: Dense is its score).
	Search(ctx context.Context, f Filter, vector []float32, query string, k int) ([]Hit, error)
	// Scroll pages through the tenant's matching points in id order,
	// starting after the id `after` ("" = from the start). It returns the
	// cursor for the next page, "" when there is none.
	Scroll(ctx context.Context, f Filter, after string, limit int) ([]Point, string, error)
	// Count returns the number of points of the account (all users).
	Count(ctx context.Context, accountID string) (int, error)
	// Model returns the embedding model id stored with the index.
	Model() string
	Close() error
}

// Scorer is implemented by stores that score given points against vectors without a search:
// recall scores the candidates its searches found against its per-person queries.
type Scorer interface {
	// Cosines returns, for each of vecs, the dense score (as Hit.Dense: the cosine clamped to
	// [0,1]) of each of the tenant's points ids, in the order of ids; a point not found (or
	// of another tenant) scores 0.
	Cosines(ctx context.Context, accountID, userID string, ids []string, vecs [][]float32) ([][]float64, error)
}

// Pinger is a Store that is a server of its own (Qdrant): Ping fails while it cannot be
// reached, so a consumer can tell a dependency's outage from a message's own failure and
// redeliver the message instead of dead-lettering it (docs/design.md §8). The local store
// lives in the process and has no Ping.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Compactor is a Store whose files keep deleted points until it compacts them: the local
// store keeps a deleted point in its partition's snapshot and log until the next snapshot.
// Erasure compacts the erased tenant so that nothing erased stays readable on disk (a store
// that is not a Compactor, Qdrant, is a server whose own storage the operator manages:
// docs/operations.md "Erasure on disk").
type Compactor interface {
	// Compact rewrites the tenant's stored files from its live points only.
	Compact(ctx context.Context, accountID, userID string) error
}

func in(list []string, v string) bool {
	if len(list) == 0 {
		return true
	}
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
