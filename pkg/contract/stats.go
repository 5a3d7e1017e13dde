package contract

// Stats kinds (docs/design.md §6 "Ops queries").
const (
	StatsOverview   = "overview"
	StatsCategories = "categories"
	StatsTrends     = "trends"
	StatsAgents     = "agents"
)

// StatsKinds lists every stats kind.
var StatsKinds = []string{StatsOverview, StatsCategories, StatsTrends, StatsAgents}

// StatsRequest is the body of <p>.rpc.<account>.stats: ops figures of the subject's account,
// or of every account when AllAccounts is set (operator keys only; the gateway decides). The
// answers are counts only, never user text.
type StatsRequest struct {
	V           int    `json:"v"`
	Kind        string `json:"kind"`
	AllAccounts bool   `json:"all_accounts,omitempty"`
	Days        int    `json:"days,omitempty"`  // trends: days back from today (UTC), default 30, at most 366
	Limit       int    `json:"limit,omitempty"` // agents: default 10, at most 100
}

// StatsResponse answers a StatsRequest; the field of its kind is set.
type StatsResponse struct {
	V          int              `json:"v"`
	Kind       string           `json:"kind"`
	Account    string           `json:"account"` // the account, or "*" across accounts
	Overview   *OverviewStats   `json:"overview,omitempty"`
	Categories map[string]int64 `json:"categories,omitempty"`
	Trends     []DayStats       `json:"trends,omitempty"`
	Agents     []AgentStats     `json:"agents,omitempty"`
}

// OverviewStats is the run overview.
type OverviewStats struct {
	Sessions       int64 `json:"sessions"`
	Messages       int64 `json:"messages"`
	Commits        int64 `json:"commits"`
	Memories       int64 `json:"memories"` // active
	PendingCommits int64 `json:"pending_commits"`
	Failures       int64 `json:"failures"` // synchronous commits answered failed or timeout
}

// DayStats counts what was created on one UTC day.
type DayStats struct {
	Date     string `json:"date"` // YYYY-MM-DD
	Messages int64  `json:"messages"`
	Commits  int64  `json:"commits"`
	Memories int64  `json:"memories"`
}

// AgentStats is one agent's activity.
type AgentStats struct {
	AccountID string `json:"account_id,omitempty"` // across accounts only
	AgentID   string `json:"agent_id"`
	Sessions  int64  `json:"sessions"`
	Messages  int64  `json:"messages"`
	Memories  int64  `json:"memories"`
}

// EraseRequest is the body of <p>.rpc.<account>.erase (docs/design.md §5 "Erasure"): one session of the
// user, or the whole user when SessionID is empty.
type EraseRequest struct {
	V         int    `json:"v"`
	UserID    string `json:"user_id"`
	SessionID string `json:"session_id,omitempty"`
}

// EraseResult says what an erasure removed.
type EraseResult struct {
	V            int    `json:"v"`
	UserID       string `json:"user_id"`
	SessionID    string `json:"session_id,omitempty"`
	Sessions     int    `json:"sessions"`
	Messages     int64  `json:"messages"`
	Archives     int64  `json:"archives"`
	Memories     int64  `json:"memories"`      // deleted
	MemoriesKept int64  `json:"memories_kept"` // lost this session's sources, kept others
	Summaries    int64  `json:"summaries"`
	Vectors      int    `json:"vectors"`
	Purged       uint64 `json:"purged"` // JetStream messages (TURNS, COMMITS, EVENTS, DLQ)
}
