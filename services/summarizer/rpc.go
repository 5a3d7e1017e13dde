package summarizer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/micro"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/store"
)

// OpSummary is the RPC op of the digests: <p>.rpc.<account>.summary. docs/design.md §2 lists it among
// recall's ops; the summarizer serves it because it owns the digests (the gateway maps
// GET /v1/summaries to it).
const OpSummary = "summary"

func (s *Service) handleSummaryRPC(ctx context.Context, account string, req micro.Request) {
	var r contract.SummaryRequest
	if err := json.Unmarshal(req.Data(), &r); err != nil {
		_ = bus.RespondError(req, bus.CodeBadRequest, fmt.Errorf("decode summary request: %w", err))
		return
	}
	res, err := s.Summary(ctx, account, r)
	switch {
	case errors.Is(err, ErrBadRequest):
		_ = bus.RespondError(req, bus.CodeBadRequest, err)
	case errors.Is(err, store.ErrNotFound):
		_ = bus.RespondError(req, bus.CodeNotFound, err)
	case err != nil:
		_ = bus.RespondError(req, bus.CodeUnavailable, err)
	default:
		_ = bus.RespondJSON(req, res)
	}
}

// ErrBadRequest marks a summary request that can never succeed.
var ErrBadRequest = errors.New("bad summary request")

// Summary returns the stored digest of the request's user (or agent) for the bucket of
// period containing date (in the configured time zone; today when empty); store.ErrNotFound,
// naming the bucket and when its digest is built, when there is none yet.
func (s *Service) Summary(ctx context.Context, account string, r contract.SummaryRequest) (contract.SummaryResponse, error) {
	if r.UserID == "" {
		return contract.SummaryResponse{}, fmt.Errorf("%w: user_id is required", ErrBadRequest)
	}
	date := r.Date
	if date == "" {
		date = s.d.Now().In(s.cfg.Location).Format(time.DateOnly) // today, where the digests are cut
	}
	day, err := time.ParseInLocation(time.DateOnly, date, s.cfg.Location)
	if err != nil {
		return contract.SummaryResponse{}, fmt.Errorf("%w: date %q is not YYYY-MM-DD", ErrBadRequest, r.Date)
	}
	span, err := BucketOf(r.Period, day.Add(12*time.Hour), s.cfg.Location)
	if err != nil {
		return contract.SummaryResponse{}, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	d, err := s.d.Store.GetDigest(ctx, account, r.UserID, r.AgentID, span.Period, span.Bucket)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return contract.SummaryResponse{}, fmt.Errorf("no %s digest for %s yet (a digest is built by the scheduled job after its period ends): %w",
				span.Period, span.Bucket, store.ErrNotFound)
		}
		return contract.SummaryResponse{}, err
	}
	return contract.SummaryResponse{V: contract.Version, Period: d.Period, Bucket: d.Bucket, Text: d.Text, CreatedAt: d.UpdatedAt}, nil
}
