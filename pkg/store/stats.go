package store

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/membus/membus/pkg/contract"
)

// dayUS is one day in microseconds (the unit of every *_us column).
const dayUS = int64(24 * time.Hour / time.Microsecond)

// accountFilter is the WHERE fragment selecting one account, or every account when account
// is "" (operator figures).
func accountFilter(col, account string) (string, []any) {
	if account == "" {
		return "1 = 1", nil
	}
	return col + " = ?", []any{account}
}

func (s *Store) count(ctx context.Context, q string, args ...any) (int64, error) {
	var n int64
	if err := s.db.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("stats: %w", err)
	}
	return n, nil
}

// OverviewStats counts sessions, messages, commits (archives), active memories, sessions with
// a requested but not yet archived commit, and synchronous commits answered failed or
// timeout — for one account, or every account when account is "".
func (s *Store) OverviewStats(ctx context.Context, account string) (contract.OverviewStats, error) {
	var o contract.OverviewStats
	var err error
	w, args := accountFilter("account_id", account)
	if o.Sessions, err = s.count(ctx, "SELECT COUNT(*) FROM sessions WHERE "+w, args...); err != nil {
		return o, err
	}
	if o.Messages, err = s.count(ctx, "SELECT COALESCE(SUM(message_count), 0) FROM sessions WHERE "+w, args...); err != nil {
		return o, err
	}
	if o.PendingCommits, err = s.count(ctx, "SELECT COUNT(*) FROM sessions WHERE commit_requested_upto > archived_upto AND "+w, args...); err != nil {
		return o, err
	}
	if o.Commits, err = s.count(ctx, "SELECT COUNT(*) FROM archives WHERE "+w, args...); err != nil {
		return o, err
	}
	if o.Memories, err = s.count(ctx, "SELECT COUNT(*) FROM memories WHERE valid_to_us IS NULL AND superseded_by IS NULL AND duplicate_of IS NULL AND "+w, args...); err != nil {
		return o, err
	}
	if o.Failures, err = s.count(ctx, `SELECT COUNT(*) FROM commit_results WHERE (result LIKE '%"status":"failed"%' OR result LIKE '%"status":"timeout"%') AND `+w, args...); err != nil {
		return o, err
	}
	return o, nil
}

// CategoryStats counts active memories by category.
func (s *Store) CategoryStats(ctx context.Context, account string) (map[string]int64, error) {
	w, args := accountFilter("account_id", account)
	rows, err := s.db.QueryContext(ctx, "SELECT category, COUNT(*) FROM memories WHERE valid_to_us IS NULL AND superseded_by IS NULL AND duplicate_of IS NULL AND "+
		w+" GROUP BY category", args...)
	if err != nil {
		return nil, fmt.Errorf("stats categories: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var c string
		var n int64
		if err := rows.Scan(&c, &n); err != nil {
			return nil, err
		}
		out[c] = n
	}
	return out, rows.Err()
}

// TrendStats counts messages, commits and memories created on each UTC day of the last
// `days` days ending today (by the store's clock), oldest first; days without activity are
// listed with zeros.
func (s *Store) TrendStats(ctx context.Context, account string, days int) ([]contract.DayStats, error) {
	if days <= 0 {
		return nil, fmt.Errorf("stats trends: days must be positive")
	}
	today := s.now().UTC().Truncate(24 * time.Hour)
	first := today.AddDate(0, 0, -(days - 1))
	out := make([]contract.DayStats, days)
	for i := range out {
		out[i].Date = first.AddDate(0, 0, i).Format(time.DateOnly)
	}
	firstDay := first.UnixMicro() / dayUS
	div := "/"
	if s.dialect == MySQL {
		div = "DIV"
	}
	w, args := accountFilter("account_id", account)
	for _, src := range []struct {
		table string
		add   func(d *contract.DayStats, n int64)
	}{
		{"messages", func(d *contract.DayStats, n int64) { d.Messages += n }},
		{"archives", func(d *contract.DayStats, n int64) { d.Commits += n }},
		{"memories", func(d *contract.DayStats, n int64) { d.Memories += n }},
	} {
		q := fmt.Sprintf("SELECT created_us %s %d AS day, COUNT(*) FROM %s WHERE created_us >= ? AND %s GROUP BY created_us %s %d",
			div, dayUS, src.table, w, div, dayUS)
		rows, err := s.db.QueryContext(ctx, q, append([]any{first.UnixMicro()}, args...)...)
		if err != nil {
			return nil, fmt.Errorf("stats trends %s: %w", src.table, err)
		}
		for rows.Next() {
			var day, n int64
			if err := rows.Scan(&day, &n); err != nil {
				rows.Close()
				return nil, err
			}
			if i := day - firstDay; i >= 0 && i < int64(days) {
				src.add(&out[i], n)
			}
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// AgentStats lists the most active agents (by messages, then sessions) with their sessions,
// messages and active agent-scoped memories; across accounts each row names its account.
func (s *Store) AgentStats(ctx context.Context, account string, limit int) ([]contract.AgentStats, error) {
	type key struct{ account, agent string }
	byKey := map[key]*contract.AgentStats{}
	get := func(k key) *contract.AgentStats {
		a, ok := byKey[k]
		if !ok {
			a = &contract.AgentStats{AgentID: k.agent}
			if account == "" {
				a.AccountID = k.account
			}
			byKey[k] = a
		}
		return a
	}
	w, args := accountFilter("account_id", account)
	rows, err := s.db.QueryContext(ctx, "SELECT account_id, agent_id, COUNT(*), COALESCE(SUM(message_count), 0) FROM sessions WHERE "+w+
		" GROUP BY account_id, agent_id", args...)
	if err != nil {
		return nil, fmt.Errorf("stats agents: %w", err)
	}
	for rows.Next() {
		var k key
		var sessions, messages int64
		if err := rows.Scan(&k.account, &k.agent, &sessions, &messages); err != nil {
			rows.Close()
			return nil, err
		}
		a := get(k)
		a.Sessions, a.Messages = sessions, messages
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	rows, err = s.db.QueryContext(ctx, "SELECT account_id, agent_id, COUNT(*) FROM memories WHERE agent_id <> '' AND valid_to_us IS NULL AND superseded_by IS NULL AND duplicate_of IS NULL AND "+
		w+" GROUP BY account_id, agent_id", args...)
	if err != nil {
		return nil, fmt.Errorf("stats agent memories: %w", err)
	}
	for rows.Next() {
		var k key
		var n int64
		if err := rows.Scan(&k.account, &k.agent, &n); err != nil {
			rows.Close()
			return nil, err
		}
		get(k).Memories = n
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	out := make([]contract.AgentStats, 0, len(byKey))
	for _, a := range byKey {
		out = append(out, *a)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Messages != b.Messages {
			return a.Messages > b.Messages
		}
		if a.Sessions != b.Sessions {
			return a.Sessions > b.Sessions
		}
		if a.AccountID != b.AccountID {
			return a.AccountID < b.AccountID
		}
		return a.AgentID < b.AgentID
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
