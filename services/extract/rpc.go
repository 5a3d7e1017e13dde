package extract

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/store"
)

// handleCommitRPC serves <p>.rpc.<account>.commit. It replies asynchronously: the handler
// returns at once and a goroutine waits for the commit, so many commits wait side by side.
func (s *Service) handleCommitRPC(ctx context.Context, account string, req micro.Request) {
	var r contract.CommitRPCRequest
	if err := json.Unmarshal(req.Data(), &r); err != nil {
		_ = bus.RespondError(req, bus.CodeBadRequest, fmt.Errorf("decode commit request: %w", err))
		return
	}
	if r.SessionID == "" || r.RequestID == "" {
		_ = bus.RespondError(req, bus.CodeBadRequest, errors.New("session_id and request_id are required"))
		return
	}
	go func() {
		res, save, err := s.syncCommit(ctx, account, r)
		if errors.Is(err, store.ErrNotFound) {
			_ = bus.RespondError(req, bus.CodeNotFound, fmt.Errorf("session %s not found", r.SessionID))
			return
		}
		if err != nil {
			_ = bus.RespondError(req, bus.CodeUnavailable, err)
			return
		}
		_ = bus.RespondJSON(req, res)
		// Stored after the reply, which need not wait for a write that only answers a repeated
		// request id: a repeat that comes before it finds the archive instead (resultFromArchive).
		save()
	}()
}

// SyncCommit waits until ingest has applied every turn of the session published before the
// call, queues a commit request for everything the session holds, and waits for its
// commit_completed event (docs/design.md §5 "Synchronous commit"). A repeated request id gets the
// stored result.
func (s *Service) SyncCommit(ctx context.Context, account string, r contract.CommitRPCRequest) (contract.CommitResult, error) {
	res, save, err := s.syncCommit(ctx, account, r)
	save()
	return res, err
}

// syncCommit is SyncCommit but for storing the result: the function it returns does that (or
// nothing, for a result not to store), so the RPC can reply first.
func (s *Service) syncCommit(ctx context.Context, account string, r contract.CommitRPCRequest) (contract.CommitResult, func(), error) {
	nothing := func() {}
	if b, err := s.d.Store.CommitResult(ctx, account, r.RequestID); err == nil {
		var res contract.CommitResult
		if json.Unmarshal(b, &res) == nil {
			return res, nothing, nil
		}
	}
	// Tenancy (docs/design.md §3): another user's session answers exactly like a missing one, so its
	// existence does not leak and nothing of it is committed (checked below).
	skipped := contract.CommitResult{V: contract.Version, OK: true, Status: contract.StatusSkipped, Reason: contract.ReasonNoMessages, Memories: map[string]int{}}
	timeout := s.cfg.CommitTimeout
	if r.TimeoutMS > 0 {
		timeout = time.Duration(r.TimeoutMS) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	timedOut := contract.CommitResult{V: contract.Version, Status: contract.StatusTimeout, Reason: contract.ReasonTimeout, Memories: map[string]int{}}

	if err := s.waitIngested(ctx, account, r.SessionID); err != nil {
		if ctx.Err() != nil {
			return timedOut, nothing, nil
		}
		return contract.CommitResult{}, nothing, err
	}
	// Checked once every earlier turn is applied: the session may be created by one of them.
	sess, err := s.d.Store.GetSession(ctx, account, r.SessionID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && r.UserID != "" && sess.UserID != r.UserID) {
		return skipped, nothing, nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return timedOut, nothing, nil
		}
		return contract.CommitResult{}, nothing, err
	}
	// Listen before queueing so the completion cannot slip past: on the bus, for a commit run by
	// another replica, and in process, for one run here (heard before the outbox relays it).
	done := make(chan contract.Event, 4)
	defer s.completed.wait(account, r.SessionID, r.RequestID, done)()
	sub, err := s.d.NC.Subscribe(s.d.Names.Event(contract.EventCommitCompleted, account, r.SessionID), func(m *nats.Msg) {
		var ev contract.Event
		if json.Unmarshal(m.Data, &ev) == nil && ev.RequestID == r.RequestID {
			select {
			case done <- ev:
			default:
			}
		}
	})
	if err != nil {
		return contract.CommitResult{}, nothing, err
	}
	// A failed unsubscribe leaves a subscription on a unique inbox that nothing publishes to
	// again; the connection drops it on close.
	defer func() { _ = sub.Unsubscribe() }()

	kind := r.Kind
	if kind == "" {
		kind = contract.CommitSync
	}
	_, err = s.d.Store.RequestCommit(ctx, s.d.Names.Commits, contract.CommitRequest{
		V: contract.Version, RequestID: r.RequestID, AccountID: account, UserID: r.UserID, AgentID: r.AgentID,
		SessionID: r.SessionID, Kind: kind, KeepRecent: r.KeepRecent, CreatedAt: s.d.Now().UTC(),
	})
	if errors.Is(err, store.ErrNotFound) {
		return skipped, nothing, nil
	}
	if err != nil {
		return contract.CommitResult{}, nothing, err
	}
	s.d.KickOutbox()
	if !r.Wait {
		return contract.CommitResult{V: contract.Version, OK: true, Status: contract.StatusAccepted, Memories: map[string]int{}}, nothing, nil
	}
	saved := func(res contract.CommitResult) (contract.CommitResult, func(), error) {
		return res, func() {
			if b, err := json.Marshal(res); err == nil {
				_ = s.d.Store.SaveCommitResult(context.WithoutCancel(ctx), r.RequestID, account, r.SessionID, b)
			}
		}, nil
	}
	// The completion event is the fast path; the archive row is the truth, checked now (the
	// commit may have finished before this call, e.g. after an earlier wait:false) and then
	// now and again in case an event was missed.
	poll := time.NewTicker(500 * time.Millisecond)
	defer poll.Stop()
	for {
		if res, ok := s.resultFromArchive(ctx, account, r.RequestID); ok {
			return saved(res)
		}
		select {
		case ev := <-done:
			return saved(s.result(ctx, account, ev))
		case <-poll.C:
		case <-ctx.Done():
			return timedOut, nothing, nil
		}
	}
}

// resultFromArchive rebuilds the result of a request whose archive is already indexed.
func (s *Service) resultFromArchive(ctx context.Context, account, requestID string) (contract.CommitResult, bool) {
	a, err := s.d.Store.ArchiveByRequest(ctx, account, requestID)
	if err != nil || (a.State != store.StateIndexed && a.State != store.StateSummarized) {
		return contract.CommitResult{}, false
	}
	sess, err := s.d.Store.GetSession(ctx, account, a.SessionID)
	if err != nil {
		return contract.CommitResult{}, false
	}
	return s.result(ctx, account, contract.Event{Status: contract.StatusCompleted, ArchiveID: a.ID, Memories: a.Memories,
		TokensBefore: int(sess.PendingTokens + a.Tokens), TokensAfter: int(sess.PendingTokens)}), true
}

func (s *Service) result(ctx context.Context, account string, ev contract.Event) contract.CommitResult {
	res := contract.CommitResult{
		V: contract.Version, OK: ev.Status == contract.StatusCompleted || ev.Status == contract.StatusSkipped,
		Status: ev.Status, Reason: ev.Reason, ArchiveID: ev.ArchiveID, Compacted: ev.ArchiveID != "",
		Memories: ev.Memories, TokensBefore: ev.TokensBefore, TokensAfter: ev.TokensAfter,
	}
	if res.Memories == nil {
		res.Memories = map[string]int{}
	}
	if ev.ArchiveID != "" {
		if a, err := s.d.Store.GetArchive(ctx, account, ev.ArchiveID); err == nil && a.Abstract != "" {
			res.Summary = a.Abstract
		}
	}
	return res
}

// waitIngested returns once no turn event of the session published before the call is
// still waiting to be applied. Ingest removes a message from the TURNS work queue once it has
// stored it and acked, so every event of the session's subject published before the call is
// either still queued, at or before the last queued one (newest, read at the call), or stored.
// The session is caught up when the first queued message of its subject comes after newest
// (or none is left), or when it is newest itself and SQL says that very event is applied.
// Ingest records in the session's row, in the transaction that stores a turn, the highest
// stream sequence it applied to the session (AppliedTurnsSeq), visible before its ack has
// reached the server and removed the message. That is a maximum, not a watermark: ingest's
// workers store a session's events out of stream order, so a later event may be applied (and
// removed) while an earlier one is still queued and unapplied — newest is then that earlier
// one, and the recorded sequence lies past it. Only a recorded sequence equal to newest says
// newest is stored; past it, the wait goes on until newest is removed. A turn ingest skips (a
// heartbeat) is never recorded: its removal ends the wait. It looks every 0.5 ms for the first
// 5 ms — a turn published just before the call is usually stored within a few milliseconds —
// then twice as long each time up to 20 ms.
func (s *Service) waitIngested(ctx context.Context, account, session string) error {
	stream, err := s.d.JS.Stream(ctx, s.d.Names.Stream(bus.StreamTurns))
	if err != nil {
		return err
	}
	subject := s.d.Names.Turns(account, session)
	newest, err := stream.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	last := newest.Sequence
	// Read once, when first needed: a lost delete happens only when a server restarts, not
	// while a commit waits.
	floor := sync.OnceValue(func() uint64 { return s.ingestAckFloor(ctx) })
	for looks := 1; ; looks++ {
		wait := 500 * time.Microsecond
		if looks > 10 {
			wait = min(wait<<min(looks-10, 6), 20*time.Millisecond)
		}
		applied, err := s.d.Store.AppliedTurnsSeq(ctx, account, session)
		if err != nil {
			return err
		}
		first, err := firstQueued(ctx, stream, subject, last, floor)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if caughtUp(first, last, applied) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// firstQueued is the stream sequence of the session's first turn event still queued for
// ingest. An event at or below the ingest consumer's ack floor was stored and acked: it stays
// in the work queue only when its removal was lost (the embedded server killed -9 between
// persisting the consumer's ack and the stream's delete), and no one will deliver it again,
// so it is passed over rather than waited for until the commit times out. The floor is only
// asked for when the first queued event is one the caller would wait for (at or before newest).
func firstQueued(ctx context.Context, stream jetstream.Stream, subject string, newest uint64, ackFloor func() uint64) (uint64, error) {
	m, err := stream.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(subject))
	if err != nil {
		return 0, err
	}
	if m.Sequence > newest {
		return m.Sequence, nil
	}
	floor := ackFloor()
	for m.Sequence <= floor {
		if m, err = stream.GetMsg(ctx, m.Sequence+1, jetstream.WithGetMsgSubject(subject)); err != nil {
			return 0, err
		}
	}
	return m.Sequence, nil
}

// ingestAckFloor is the stream sequence up to which the ingest consumer has had every turn
// acked; 0 when it cannot be read (no consumer yet: nothing is passed over).
func (s *Service) ingestAckFloor(ctx context.Context) uint64 {
	// A request the server refuses (a service user without the permission) gets no reply:
	// it must not hold the commit until its deadline.
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := s.d.JS.Consumer(ctx, s.d.Names.Stream(bus.StreamTurns), s.d.Names.Consumer(bus.ServiceIngest))
	if err != nil {
		return 0
	}
	return c.CachedInfo().AckFloor.Stream // the lookup just read it
}

// caughtUp says whether a session is caught up with the turn events published before a sync
// commit, whose last one still queued at the call had stream sequence newest, when the first
// of its events still queued is first and SQL records applied as the highest stream sequence
// ingest applied to the session. applied past newest says nothing of newest: a later event
// may have been stored first.
func caughtUp(first, newest, applied uint64) bool {
	return first > newest || (first == newest && applied == newest)
}
