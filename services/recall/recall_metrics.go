package recall

import (
	"context"
	"time"

	"github.com/membus/membus/pkg/contract"
)

// Recall outcomes, the label of membus_recall_duration_seconds.
const (
	outcomeOK       = "ok"       // items returned from the full search
	outcomeEmpty    = "empty"    // nothing above the threshold (or a query too short)
	outcomeDegraded = "degraded" // answered without the vector store
	outcomeError    = "error"    // the request failed
)

// recallOutcome names what a recall answered.
func recallOutcome(resp contract.RecallResponse, err error) string {
	switch {
	case err != nil:
		return outcomeError
	case resp.Degraded:
		return outcomeDegraded
	case len(resp.Items) == 0:
		return outcomeEmpty
	default:
		return outcomeOK
	}
}

// observedRecall is Recall timed by outcome, the endpoint the RPC serves.
func (s *Service) observedRecall(ctx context.Context, account string, req contract.RecallRequest) (contract.RecallResponse, error) {
	start := time.Now()
	resp, err := s.Recall(ctx, account, req)
	s.byOutcome(recallOutcome(resp, err), time.Since(start).Seconds())
	return resp, err
}
