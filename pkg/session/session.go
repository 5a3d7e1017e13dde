// Package session is the session store the services read and write history through: SQL is
// the source of truth (pkg/store), and in distributed mode a Redis hot cache sits in front of
// it (docs/design.md §4). NewSQL has no cache (embedded mode, or no Redis); NewCached puts Redis in
// front. Both satisfy the same conformance suite (sessiontest.Run).
package session

import (
	"context"
	"errors"
	"sort"

	"github.com/membus/membus/pkg/store"
)

const (
	// HotMessages is how many of a session's newest active messages the cache holds.
	HotMessages = 200
	// DefaultReserve is the room Window keeps for a summary when reserve is negative.
	DefaultReserve = 2000
	// MessageOverhead is what Window counts per message on top of its tokens (role and
	// separators in the host's prompt).
	MessageOverhead = 4
)

// Store is how services read and write session history. Safe for concurrent use.
type Store interface {
	// ApplyTurns stores a batch in SQL (one transaction per batch, store.Store.ApplyTurns),
	// then updates the cache, then sets the dedup keys. A cache failure never fails the call.
	ApplyTurns(ctx context.Context, trigger store.Trigger, turns []store.Turn) ([]store.ApplyResult, error)
	// Active returns the session's newest limit active (not archived) messages — newest by
	// seq, the storage order — in (created_at, position) order; limit ≤ 0 means all of them.
	// An unknown session has none.
	Active(ctx context.Context, account, session string, limit int) ([]store.Message, error)
	// Meta returns the session row; store.ErrNotFound when the account has no such session.
	Meta(ctx context.Context, account, session string) (*store.Session, error)
	// Window returns the newest active messages (by seq) whose tokens, each plus
	// MessageOverhead, fit budget − reserve (reserve < 0 means DefaultReserve), in
	// (created_at, position) order, and the tokens they use. It stops at the first message
	// that does not fit, so the window is contiguous.
	Window(ctx context.Context, account, session string, budget, reserve int) ([]store.Message, int, error)
	// Invalidate drops the session's cached state; extract calls it when messages leave the
	// active set (archive).
	Invalidate(ctx context.Context, account, session string) error
	// SeenRecently reports whether the message's dedup key says it was applied. Only an
	// optimisation for replays: false on a miss or any error, and correctness stays with the
	// SQL unique key.
	SeenRecently(ctx context.Context, account, session, messageID string) bool
	// ForgetDedup drops the dedup keys of erased messages.
	ForgetDedup(ctx context.Context, account, session string, messageIDs []string) error
}

// NewSQL returns the session store without a cache.
func NewSQL(st *store.Store) Store { return &sqlStore{st: st} }

// sqlStore reads and writes SQL only.
type sqlStore struct {
	st *store.Store
}

func (s *sqlStore) ApplyTurns(ctx context.Context, trigger store.Trigger, turns []store.Turn) ([]store.ApplyResult, error) {
	return s.st.ApplyTurns(ctx, trigger, turns)
}

func (s *sqlStore) Active(ctx context.Context, account, session string, limit int) ([]store.Message, error) {
	sess, err := s.st.GetSession(ctx, account, session)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	msgs, err := s.newest(ctx, sess, limit)
	if err != nil {
		return nil, err
	}
	sortHistory(msgs)
	return msgs, nil
}

func (s *sqlStore) Meta(ctx context.Context, account, session string) (*store.Session, error) {
	return s.st.GetSession(ctx, account, session)
}

func (s *sqlStore) Window(ctx context.Context, account, session string, budget, reserve int) ([]store.Message, int, error) {
	sess, err := s.st.GetSession(ctx, account, session)
	if errors.Is(err, store.ErrNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	return s.window(ctx, sess, nil, budget, reserve)
}

func (s *sqlStore) Invalidate(context.Context, string, string) error { return nil }

func (s *sqlStore) SeenRecently(context.Context, string, string, string) bool { return false }

// ForgetDedup has nothing to forget without Redis.
func (s *sqlStore) ForgetDedup(context.Context, string, string, []string) error { return nil }

// newest reads the newest limit active messages of sess (limit ≤ 0: all) from SQL, in
// ascending seq order.
// Seqs are contiguous per session and archives cover archived_upto+1… in order, so the
// active messages are exactly the seqs above archived_upto.
func (s *sqlStore) newest(ctx context.Context, sess *store.Session, limit int) ([]store.Message, error) {
	high := sess.NextSeq - 1
	low := sess.ArchivedUpto + 1
	if limit > 0 {
		low = max(low, high-int64(limit)+1)
	}
	if high < low {
		return nil, nil
	}
	msgs, err := s.st.MessagesBySeq(ctx, sess.AccountID, sess.SessionID, low, high)
	if err != nil {
		return nil, err
	}
	return activeOnly(msgs), nil
}

// window picks from hot (the cached newest messages, ascending seq; nil for none) and then
// from SQL below them, newest seq first, until a message does not fit.
func (s *sqlStore) window(ctx context.Context, sess *store.Session, hot []store.Message, budget, reserve int) ([]store.Message, int, error) {
	if reserve < 0 {
		reserve = DefaultReserve
	}
	left := budget - reserve
	var picked []store.Message
	used := 0
	take := func(msgs []store.Message) bool { // msgs in ascending seq; false once one does not fit
		for i := len(msgs) - 1; i >= 0; i-- {
			t := msgs[i].Tokens + MessageOverhead
			if t > left {
				return false
			}
			left -= t
			used += t
			picked = append(picked, msgs[i])
		}
		return true
	}
	next := sess.NextSeq - 1 // the highest seq not yet considered
	if hot != nil {
		if !take(hot) {
			sortHistory(picked)
			return picked, used, nil
		}
		if len(hot) > 0 {
			next = hot[0].Seq - 1
		}
	}
	for next > sess.ArchivedUpto {
		low := max(sess.ArchivedUpto+1, next-HotMessages+1)
		msgs, err := s.st.MessagesBySeq(ctx, sess.AccountID, sess.SessionID, low, next)
		if err != nil {
			return nil, 0, err
		}
		if !take(activeOnly(msgs)) {
			break
		}
		next = low - 1
	}
	sortHistory(picked)
	return picked, used, nil
}

// activeOnly drops archived messages (an archive may land between two reads).
func activeOnly(msgs []store.Message) []store.Message {
	out := msgs[:0]
	for _, m := range msgs {
		if m.ArchiveID == "" {
			out = append(out, m)
		}
	}
	return out
}

// sortHistory puts messages in history order: (created_at, position), then seq.
func sortHistory(msgs []store.Message) {
	sort.SliceStable(msgs, func(i, j int) bool {
		a, b := msgs[i], msgs[j]
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.Before(b.CreatedAt)
		}
		if a.Position != b.Position {
			return a.Position < b.Position
		}
		return a.Seq < b.Seq
	})
}
