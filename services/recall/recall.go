// Package recall answers the two questions OpenClaw asks before every model call — which
// long-term memories are relevant now, and which history fits the context window — as
// request-reply endpoints on <p>.rpc.<account>.<op> (nats micro, queue group, any replicas).
// The account always comes from the subject.
package recall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/embed"
	"github.com/membus/membus/pkg/metrics"
	"github.com/membus/membus/pkg/session"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/vector"
)

// Config of the recall service (docs/design.md §6 defaults).
type Config struct {
	Limit             int           // default 6
	ScoreThreshold    float64       // default 0.15
	MaxInjectedChars  int           // default 4000
	CandidatesPerSide int           // default 24, of each side of each scope (SPEC; MEMBUS_RECALL_CANDIDATES)
	MaxItemChars      int           // default 1000
	UserShare         float64       // default 0.6 of the budget when the agent scope has candidates
	DefaultScopes     []string      // scopes searched when the request names none: user, agent, archive
	Fusion            string        // contract.FusionWeighted (default), FusionRRF or FusionDense (evaluation only)
	Decay             bool          // temporal decay (half-life 30 days, floor 0.5×, evergreen exempt); off by default
	MMR               bool          // MMR rerank (λ 0.7); off by default
	PersonQueries     bool          // a question naming two speakers embedded once more per person (persons.go); off by default: over the latency budget
	ArchiveContext    int           // earlier messages shown with an archive item as context (never sources); default 1
	SearchTimeout     time.Duration // bound of the vector search; past it recall answers degraded (default 2 s)
	FallbackMemories  int           // newest memories the degraded keyword search scores (default 5000)
	KeepRecent        int           // messages an automatic commit keeps active; pending tokens exclude them (default 10)
}

// Defaults returns docs/design.md §6's defaults.
func Defaults() Config {
	return Config{Limit: 6, ScoreThreshold: 0.15, MaxInjectedChars: 4000, CandidatesPerSide: contract.DefaultRecallCandidates, MaxItemChars: 1000, UserShare: 0.6,
		DefaultScopes: []string{contract.ScopeUser, contract.ScopeAgent, contract.ScopeArchive}, Fusion: contract.FusionWeighted,
		ArchiveContext: 1, SearchTimeout: 2 * time.Second, FallbackMemories: 5000, KeepRecent: contract.DefaultKeepRecent}
}

// Validate names the bad key.
func (c Config) Validate() error {
	switch {
	case c.Limit <= 0:
		return fmt.Errorf("recall limit: must be positive")
	case c.MaxInjectedChars <= 0:
		return fmt.Errorf("max_injected_chars: must be positive")
	case c.CandidatesPerSide <= 0:
		return fmt.Errorf("candidates_per_side: must be positive")
	case !contract.ValidFusion(c.Fusion):
		return fmt.Errorf("recall fusion: %q is not %q, %q or %q", c.Fusion, contract.FusionWeighted, contract.FusionRRF, contract.FusionDense)
	case len(uniqueScopes(c.DefaultScopes)) == 0 || len(uniqueScopes(c.DefaultScopes)) != len(c.DefaultScopes):
		return fmt.Errorf("recall default scopes: %v, want some of user, agent, archive", c.DefaultScopes)
	case c.ArchiveContext < 0:
		return fmt.Errorf("recall archive context: must not be negative")
	case c.SearchTimeout <= 0:
		return fmt.Errorf("recall search timeout: must be positive")
	case c.FallbackMemories <= 0:
		return fmt.Errorf("recall fallback memories: must be positive")
	}
	return nil
}

// Deps are what recall needs.
type Deps struct {
	NC         *nats.Conn
	Names      bus.Names
	Store      *store.Store
	Sessions   session.Store // active history (nil: session.NewSQL(Store))
	Embedder   embed.Embedder
	Vectors    vector.Store
	Metrics    *metrics.Metrics
	Logger     *slog.Logger
	KickOutbox func()
	Now        func() time.Time
	// Sync, when set, returns once this replica's index holds every commit published before
	// the call, or an error when it cannot catch up in time (recall then answers degraded).
	// A replica that searches a local index of its own sets it (projection.Follower); with a
	// shared index (Qdrant) or in one process (`membus up`) the index is always current.
	Sync func(ctx context.Context) error
}

// Service is the recall service.
type Service struct {
	cfg Config
	d   Deps
	log *slog.Logger

	latency   func(float64)
	degraded  func(float64)
	persons   func(float64)
	byOutcome func(outcome string, seconds float64)
}

// New builds the service.
func New(cfg Config, d Deps) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if d.NC == nil || d.Store == nil || d.Embedder == nil || d.Vectors == nil || d.Metrics == nil {
		return nil, errors.New("recall: NC, Store, Embedder, Vectors and Metrics are required")
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.KickOutbox == nil {
		d.KickOutbox = func() {}
	}
	if d.Sessions == nil {
		d.Sessions = session.NewSQL(d.Store)
	}
	s := &Service{cfg: cfg, d: d, log: d.Logger}
	s.latency = d.Metrics.Histogram("recall_seconds", "Time to answer one recall.").Observe
	s.degraded = d.Metrics.Counter("recall_degraded_total", "Recalls answered degraded (vector store unavailable).").Add
	s.persons = d.Metrics.Counter("recall_person_queries_total", "Recalls whose question named two speakers and was embedded once more per person.").Add
	byOutcome := d.Metrics.HistogramVec("recall_duration_seconds", "Time to answer one recall RPC, by outcome (ok, empty, degraded, error).", "outcome")
	s.byOutcome = func(o string, v float64) { byOutcome.WithLabelValues(o).Observe(v) }
	return s, nil
}

// Run serves the endpoints until ctx is done.
func (s *Service) Run(ctx context.Context) error {
	rpc, err := bus.NewRPCServer(s.d.NC, s.d.Names, "recall", "1.0.0")
	if err != nil {
		return err
	}
	defer func() {
		if err := rpc.Stop(); err != nil {
			s.log.Warn("stop the RPC endpoints", "err", err)
		}
	}()
	for op, h := range map[string]bus.RPCHandler{
		"recall":          jsonHandler(s.observedRecall),
		"context":         jsonHandler(s.Context),
		"memories.list":   jsonHandler(s.ListMemories),
		"memories.export": jsonHandler(s.ExportMemories),
		"memories.get":    jsonHandler(s.GetMemory),
		"memories.forget": jsonHandler(s.ForgetMemory),
		"session.get":     jsonHandler(s.SessionMeta),
		"archive.search":  jsonHandler(s.ArchiveSearch),
		"archive.expand":  jsonHandler(s.ArchiveExpand),
		"stats":           jsonHandler(s.Stats),
		"erase":           jsonHandler(s.Erase),
	} {
		if err := rpc.Handle(op, h); err != nil {
			return err
		}
	}
	<-ctx.Done()
	return nil
}

// errBadRequest marks a request the caller must fix.
var errBadRequest = errors.New("bad request")

// jsonHandler adapts a typed handler to an RPC endpoint.
func jsonHandler[Req, Resp any](fn func(ctx context.Context, account string, req Req) (Resp, error)) bus.RPCHandler {
	return func(ctx context.Context, account string, r micro.Request) {
		var req Req
		if err := json.Unmarshal(r.Data(), &req); err != nil {
			_ = bus.RespondError(r, bus.CodeBadRequest, fmt.Errorf("decode request: %w", err))
			return
		}
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		resp, err := fn(ctx, account, req)
		switch {
		case errors.Is(err, store.ErrNotFound):
			_ = bus.RespondError(r, bus.CodeNotFound, err)
		case errors.Is(err, errBadRequest):
			_ = bus.RespondError(r, bus.CodeBadRequest, err)
		case err != nil:
			_ = bus.RespondError(r, bus.CodeInternal, err)
		default:
			_ = bus.RespondJSON(r, resp)
		}
	}
}
