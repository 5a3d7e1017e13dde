package qdrant

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/membus/membus/pkg/vector"
)

// Payload fields of a point.
const (
	fieldAccount  = "account_id"
	fieldUser     = "user_id"
	fieldAgent    = "agent_id"
	fieldScope    = "scope"
	fieldKind     = "kind"
	fieldCategory = "category"
	fieldText     = "text"
	fieldCreated  = "created_at"
	fieldPayload  = "payload"
)

// Store is the Qdrant adapter of vector.Store: one collection, a named dense
// vector `dense` (cosine) and a sparse vector `bm25` (IDF modifier), points
// keyed by the memory UUID, every call filtered by the tenant.
type Store struct {
	cfg    Config
	client *qdrant.Client
	model  string
	dim    int
	avgLen float64

	mu     sync.RWMutex
	closed bool
}

var (
	_ vector.Store  = (*Store)(nil)
	_ vector.Scorer = (*Store)(nil)
	_ vector.Pinger = (*Store)(nil)
)

// Open connects to Qdrant, creates the collection when it is missing and
// checks the model id and dimension stored with it.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	cfg = cfg.withDefaults()
	if cfg.Collection == "" {
		return nil, errors.New("qdrant: Config.Collection is required")
	}
	ep, err := parseURL(cfg.URL, cfg.APIKey)
	if err != nil {
		return nil, err
	}
	client, err := qdrant.NewClient(&qdrant.Config{
		Host:                   ep.host,
		Port:                   ep.port,
		APIKey:                 ep.apiKey,
		UseTLS:                 ep.tls,
		GrpcOptions:            cfg.DialOptions,
		SkipCompatibilityCheck: true, // an unbounded call at start; ensureCollection checks what matters
	})
	if err != nil {
		return nil, fmt.Errorf("qdrant client for %s:%d: %w", ep.host, ep.port, err)
	}
	s := &Store{cfg: cfg, client: client}
	if err := s.ensureCollection(ctx); err != nil {
		_ = client.Close() // the ensureCollection error is the one to report
		return nil, err
	}
	return s, nil
}

// Model returns the embedding model id stored with the collection.
func (s *Store) Model() string { return s.model }

// Dim returns the dense vector dimension of the collection.
func (s *Store) Dim() int { return s.dim }

// Collection returns the collection name.
func (s *Store) Collection() string { return s.cfg.Collection }

// Close closes the connections. Later calls return vector.ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.client.Close()
}

// Ping implements vector.Pinger with Qdrant's health check, bounded by the call timeout.
func (s *Store) Ping(ctx context.Context) error {
	ctx, done, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer done()
	if _, err := s.client.HealthCheck(ctx); err != nil {
		return fmt.Errorf("qdrant health check: %w", err)
	}
	return nil
}

// begin returns a context bounded by the call timeout; the caller must call
// done.
func (s *Store) begin(ctx context.Context) (context.Context, func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return nil, nil, vector.ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	return ctx, func() { cancel(); s.mu.RUnlock() }, nil
}

// mapErr maps gRPC status codes onto the package's sentinels, keeping the
// original error in the chain.
func mapErr(err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	switch st.Code() {
	case codes.InvalidArgument:
		return fmt.Errorf("%w: %w", vector.ErrInvalid, err)
	case codes.NotFound:
		return fmt.Errorf("%w: %w", vector.ErrNotFound, err)
	}
	return err
}

func canonicalID(id string) (string, bool) {
	u, err := uuid.Parse(id)
	if err != nil {
		return "", false
	}
	return u.String(), true
}

// Upsert implements vector.Store. It waits until Qdrant has applied the
// write.
func (s *Store) Upsert(ctx context.Context, model string, pts []vector.Point) error {
	if model != s.model {
		return fmt.Errorf("upsert %s vectors into %s collection %s: %w", model, s.model, s.cfg.Collection, vector.ErrModelMismatch)
	}
	if len(pts) == 0 {
		return nil
	}
	out := make([]*qdrant.PointStruct, 0, len(pts))
	for _, p := range pts {
		ps, err := s.pointStruct(p)
		if err != nil {
			return fmt.Errorf("upsert: %w", err)
		}
		out = append(out, ps)
	}
	ctx, done, err := s.begin(ctx)
	if err != nil {
		return fmt.Errorf("upsert: %w", err)
	}
	defer done()
	_, err = s.client.Upsert(ctx, &qdrant.UpsertPoints{
		CollectionName: s.cfg.Collection,
		Wait:           qdrant.PtrOf(true),
		Points:         out,
	})
	if err != nil {
		return fmt.Errorf("upsert %d points: %w", len(pts), mapErr(err))
	}
	return nil
}

func (s *Store) pointStruct(p vector.Point) (*qdrant.PointStruct, error) {
	if p.AccountID == "" || p.UserID == "" {
		return nil, fmt.Errorf("point %s: %w", p.ID, vector.ErrMissingTenant)
	}
	id, ok := canonicalID(p.ID)
	if !ok {
		return nil, fmt.Errorf("point id %q is not a UUID: %w", p.ID, vector.ErrInvalid)
	}
	if len(p.Vector) != s.dim {
		return nil, fmt.Errorf("point %s: vector has %d dimensions, collection has %d: %w", id, len(p.Vector), s.dim, vector.ErrInvalid)
	}
	vecs := map[string]*qdrant.Vector{denseName: qdrant.NewVectorDense(p.Vector)}
	if idx, val := docSparse(p.Text, s.avgLen); len(idx) > 0 {
		vecs[sparseName] = qdrant.NewVectorSparse(idx, val)
	}
	extra := make(map[string]*qdrant.Value, len(p.Payload))
	for k, v := range p.Payload {
		extra[k] = qdrant.NewValueString(v)
	}
	payload := map[string]*qdrant.Value{
		fieldAccount:  qdrant.NewValueString(p.AccountID),
		fieldUser:     qdrant.NewValueString(p.UserID),
		fieldAgent:    qdrant.NewValueString(p.AgentID),
		fieldScope:    qdrant.NewValueString(p.Scope),
		fieldKind:     qdrant.NewValueString(p.Kind),
		fieldCategory: qdrant.NewValueString(p.Category),
		fieldText:     qdrant.NewValueString(p.Text),
		fieldCreated:  qdrant.NewValueString(p.CreatedAt.UTC().Format(time.RFC3339Nano)),
		fieldPayload:  qdrant.NewValueFromFields(extra),
	}
	return &qdrant.PointStruct{Id: qdrant.NewIDUUID(id), Vectors: qdrant.NewVectorsMap(vecs), Payload: payload}, nil
}

// point converts a stored point back. The dense vector is the one Qdrant
// stores: with cosine distance that is the L2-normalised input.
func point(id *qdrant.PointId, payload map[string]*qdrant.Value, vecs *qdrant.VectorsOutput) (vector.Point, error) {
	p := vector.Point{
		ID:        id.GetUuid(),
		AccountID: payload[fieldAccount].GetStringValue(),
		UserID:    payload[fieldUser].GetStringValue(),
		AgentID:   payload[fieldAgent].GetStringValue(),
		Scope:     payload[fieldScope].GetStringValue(),
		Kind:      payload[fieldKind].GetStringValue(),
		Category:  payload[fieldCategory].GetStringValue(),
		Text:      payload[fieldText].GetStringValue(),
	}
	if p.ID == "" {
		return p, fmt.Errorf("point %v has no UUID id: %w", id, vector.ErrInvalid)
	}
	if c, ok := canonicalID(p.ID); ok {
		p.ID = c
	}
	if ts := payload[fieldCreated].GetStringValue(); ts != "" {
		t, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			return p, fmt.Errorf("point %s: created_at %q: %w", p.ID, ts, err)
		}
		p.CreatedAt = t
	}
	if fields := payload[fieldPayload].GetStructValue().GetFields(); len(fields) > 0 {
		p.Payload = make(map[string]string, len(fields))
		for k, v := range fields {
			p.Payload[k] = v.GetStringValue()
		}
	}
	if d := vecs.GetVectors().GetVectors()[denseName].GetDenseVector(); d != nil {
		p.Vector = d.GetData()
	}
	return p, nil
}

// Delete implements vector.Store: it deletes the ids that are the tenant's.
// Ids that are not UUIDs cannot exist and are ignored like unknown ones.
func (s *Store) Delete(ctx context.Context, accountID, userID string, ids []string) error {
	if accountID == "" || userID == "" {
		return fmt.Errorf("delete: %w", vector.ErrMissingTenant)
	}
	pids := pointIDs(ids)
	if len(pids) == 0 {
		return nil
	}
	ctx, done, err := s.begin(ctx)
	if err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	defer done()
	f := tenantFilter(accountID, userID)
	f.Must = append(f.Must, qdrant.NewHasID(pids...))
	_, err = s.client.Delete(ctx, &qdrant.DeletePoints{
		CollectionName: s.cfg.Collection,
		Wait:           qdrant.PtrOf(true),
		Points:         qdrant.NewPointsSelectorFilter(f),
	})
	if err != nil {
		return fmt.Errorf("delete %d points: %w", len(pids), mapErr(err))
	}
	return nil
}

func pointIDs(ids []string) []*qdrant.PointId {
	var out []*qdrant.PointId
	for _, id := range ids {
		if c, ok := canonicalID(id); ok {
			out = append(out, qdrant.NewIDUUID(c))
		}
	}
	return out
}

// Get implements vector.Store: a filtered scroll for the one id, so a
// foreign tenant's point is not found.
func (s *Store) Get(ctx context.Context, accountID, userID, id string) (vector.Point, error) {
	if accountID == "" || userID == "" {
		return vector.Point{}, fmt.Errorf("get: %w", vector.ErrMissingTenant)
	}
	cid, ok := canonicalID(id)
	if !ok {
		return vector.Point{}, fmt.Errorf("get %s: %w", id, vector.ErrNotFound)
	}
	ctx, done, err := s.begin(ctx)
	if err != nil {
		return vector.Point{}, fmt.Errorf("get: %w", err)
	}
	defer done()
	f := tenantFilter(accountID, userID)
	f.Must = append(f.Must, qdrant.NewHasID(qdrant.NewIDUUID(cid)))
	res, err := s.client.Scroll(ctx, &qdrant.ScrollPoints{
		CollectionName: s.cfg.Collection,
		Filter:         f,
		Limit:          qdrant.PtrOf(uint32(1)),
		WithPayload:    qdrant.NewWithPayload(true),
		WithVectors:    qdrant.NewWithVectorsInclude(denseName),
	})
	if err != nil {
		return vector.Point{}, fmt.Errorf("get %s: %w", cid, mapErr(err))
	}
	if len(res) == 0 {
		return vector.Point{}, fmt.Errorf("get %s: %w", cid, vector.ErrNotFound)
	}
	return point(res[0].GetId(), res[0].GetPayload(), res[0].GetVectors())
}

// Cosines implements vector.Scorer: one filtered scroll for the tenant's ids with their dense
// vectors (a foreign tenant's point is not found, so it scores 0), scored here as Search
// scores its hits.
func (s *Store) Cosines(ctx context.Context, accountID, userID string, ids []string, vecs [][]float32) ([][]float64, error) {
	if accountID == "" || userID == "" {
		return nil, fmt.Errorf("cosines: %w", vector.ErrMissingTenant)
	}
	for _, v := range vecs {
		if len(v) != s.cfg.Dim {
			return nil, fmt.Errorf("cosines: a vector has %d dimensions, index has %d: %w", len(v), s.cfg.Dim, vector.ErrInvalid)
		}
	}
	out := make([][]float64, len(vecs))
	for j := range out {
		out[j] = make([]float64, len(ids))
	}
	pids := pointIDs(ids)
	if len(pids) == 0 {
		return out, nil
	}
	ctx, done, err := s.begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("cosines: %w", err)
	}
	defer done()
	f := tenantFilter(accountID, userID)
	f.Must = append(f.Must, qdrant.NewHasID(pids...))
	res, err := s.client.Scroll(ctx, &qdrant.ScrollPoints{
		CollectionName: s.cfg.Collection,
		Filter:         f,
		Limit:          qdrant.PtrOf(uint32(len(pids))),
		WithPayload:    qdrant.NewWithPayload(false),
		WithVectors:    qdrant.NewWithVectorsInclude(denseName),
	})
	if err != nil {
		return nil, fmt.Errorf("cosines of %d points: %w", len(pids), mapErr(err))
	}
	at := make(map[string][]int, len(ids))
	for i, id := range ids {
		if c, ok := canonicalID(id); ok {
			at[c] = append(at[c], i)
		}
	}
	norms := make([]float64, len(vecs))
	for j, v := range vecs {
		norms[j] = norm(v)
	}
	for _, r := range res {
		c, ok := canonicalID(r.GetId().GetUuid())
		if !ok {
			continue
		}
		v := r.GetVectors().GetVectors().GetVectors()[denseName].GetDenseVector().GetData()
		for _, i := range at[c] {
			for j, q := range vecs {
				out[j][i] = cosine(q, norms[j], v)
			}
		}
	}
	return out, nil
}

// Scroll implements vector.Store. Qdrant orders UUID ids as 128-bit numbers,
// which is the order of their canonical strings; its scroll offset is
// inclusive, so the page starts at `after` and drops it.
func (s *Store) Scroll(ctx context.Context, f vector.Filter, after string, limit int) ([]vector.Point, string, error) {
	if f.AccountID == "" || f.UserID == "" {
		return nil, "", fmt.Errorf("scroll: %w", vector.ErrMissingTenant)
	}
	if limit <= 0 {
		return nil, "", fmt.Errorf("scroll: limit = %d: %w", limit, vector.ErrInvalid)
	}
	req := &qdrant.ScrollPoints{
		CollectionName: s.cfg.Collection,
		Filter:         searchFilter(f),
		Limit:          qdrant.PtrOf(uint32(limit + 1)),
		WithPayload:    qdrant.NewWithPayload(true),
		WithVectors:    qdrant.NewWithVectorsInclude(denseName),
	}
	if after != "" {
		c, ok := canonicalID(after)
		if !ok {
			return nil, "", fmt.Errorf("scroll: cursor %q is not a UUID: %w", after, vector.ErrInvalid)
		}
		after = c
		req.Offset = qdrant.NewIDUUID(c)
		req.Limit = qdrant.PtrOf(uint32(limit + 2))
	}
	ctx, done, err := s.begin(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("scroll: %w", err)
	}
	defer done()
	res, err := s.client.Scroll(ctx, req)
	if err != nil {
		return nil, "", fmt.Errorf("scroll: %w", mapErr(err))
	}
	out := make([]vector.Point, 0, len(res))
	for _, r := range res {
		p, err := point(r.GetId(), r.GetPayload(), r.GetVectors())
		if err != nil {
			return nil, "", fmt.Errorf("scroll: %w", err)
		}
		if p.ID == after {
			continue
		}
		out = append(out, p)
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = out[limit-1].ID
	}
	return out, next, nil
}

// Count implements vector.Store (exact count of the account's points).
func (s *Store) Count(ctx context.Context, accountID string) (int, error) {
	if accountID == "" {
		return 0, fmt.Errorf("count: %w", vector.ErrMissingTenant)
	}
	ctx, done, err := s.begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("count: %w", err)
	}
	defer done()
	n, err := s.client.Count(ctx, &qdrant.CountPoints{
		CollectionName: s.cfg.Collection,
		Filter:         &qdrant.Filter{Must: []*qdrant.Condition{qdrant.NewMatchKeyword(fieldAccount, accountID)}},
		Exact:          qdrant.PtrOf(true),
	})
	if err != nil {
		return 0, fmt.Errorf("count: %w", mapErr(err))
	}
	return int(n), nil
}

// tenantFilter is the must-filter every read and delete carries.
func tenantFilter(accountID, userID string) *qdrant.Filter {
	return &qdrant.Filter{Must: []*qdrant.Condition{
		qdrant.NewMatchKeyword(fieldAccount, accountID),
		qdrant.NewMatchKeyword(fieldUser, userID),
	}}
}

// searchFilter is the tenant filter narrowed by f's agent, scopes, kinds
// and categories (a list matches any of its values).
func searchFilter(f vector.Filter) *qdrant.Filter {
	q := tenantFilter(f.AccountID, f.UserID)
	if f.AgentID != "" {
		q.Must = append(q.Must, qdrant.NewMatchKeyword(fieldAgent, f.AgentID))
	}
	for _, l := range []struct {
		field string
		vals  []string
	}{{fieldScope, f.Scopes}, {fieldKind, f.Kinds}, {fieldCategory, f.Categories}} {
		if len(l.vals) > 0 {
			q.Must = append(q.Must, qdrant.NewMatchKeywords(l.field, l.vals...))
		}
	}
	return q
}
