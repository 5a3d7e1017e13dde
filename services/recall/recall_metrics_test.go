package recall

import (
	"errors"
	"testing"

	"github.com/membus/membus/pkg/contract"
)

func TestRecallOutcome(t *testing.T) {
	item := []contract.RecallItem{{}}
	tests := []struct {
		name string
		resp contract.RecallResponse
		err  error
		want string
	}{
		{"items from the full search are ok", contract.RecallResponse{Items: item}, nil, "ok"},
		{"no item is empty", contract.RecallResponse{}, nil, "empty"},
		{"degraded wins over items", contract.RecallResponse{Items: item, Degraded: true}, nil, "degraded"},
		{"degraded and empty is degraded", contract.RecallResponse{Degraded: true}, nil, "degraded"},
		{"an error is error", contract.RecallResponse{}, errors.New("boom"), "error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := recallOutcome(tt.resp, tt.err); got != tt.want {
				t.Errorf("recallOutcome = %q, want %q", got, tt.want)
			}
		})
	}
}
