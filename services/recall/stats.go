package recall

import (
	"context"
	"fmt"

	"github.com/membus/membus/pkg/contract"
)

// Stats answers <p>.rpc.<account>.stats (docs/design.md §6 "Ops queries"): counts of the subject's
// account, or of every account when the request says all_accounts (the gateway sets it only
// for operator keys). Never user text.
func (s *Service) Stats(ctx context.Context, account string, req contract.StatsRequest) (contract.StatsResponse, error) {
	resp := contract.StatsResponse{V: contract.Version, Kind: req.Kind, Account: account}
	scope := account
	if req.AllAccounts {
		scope, resp.Account = "", "*"
	}
	var err error
	switch req.Kind {
	case contract.StatsOverview:
		var o contract.OverviewStats
		o, err = s.d.Store.OverviewStats(ctx, scope)
		resp.Overview = &o
	case contract.StatsCategories:
		resp.Categories, err = s.d.Store.CategoryStats(ctx, scope)
	case contract.StatsTrends:
		days := req.Days
		if days == 0 {
			days = 30
		}
		if days < 0 || days > 366 {
			return resp, fmt.Errorf("%w: days must be 1–366", errBadRequest)
		}
		resp.Trends, err = s.d.Store.TrendStats(ctx, scope, days)
	case contract.StatsAgents:
		limit := req.Limit
		if limit == 0 {
			limit = 10
		}
		if limit < 0 || limit > 100 {
			return resp, fmt.Errorf("%w: limit must be 1–100", errBadRequest)
		}
		resp.Agents, err = s.d.Store.AgentStats(ctx, scope, limit)
		if resp.Agents == nil {
			resp.Agents = []contract.AgentStats{}
		}
	default:
		return resp, fmt.Errorf("%w: kind must be one of %v", errBadRequest, contract.StatsKinds)
	}
	if err != nil {
		return resp, err
	}
	if resp.Categories == nil && req.Kind == contract.StatsCategories {
		resp.Categories = map[string]int64{}
	}
	return resp, nil
}
