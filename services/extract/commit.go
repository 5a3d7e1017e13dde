package extract

import (
	"context"
	"errors"
	"fmt"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/lock"
	"github.com/membus/membus/pkg/memory"
	"github.com/membus/membus/pkg/store"
)

// Commit runs one commit request under the session lock. Archives left unfinished by an
// earlier crash are resumed first; then the range is computed at execution time (docs/design.md §5)
// from archived_upto+1 to min(upto, newest seq − keep_recent).
func (s *Service) Commit(ctx context.Context, req contract.CommitRequest) error {
	lease, err := s.d.Locker.Acquire(ctx, lock.SessionKey(req.AccountID, req.SessionID), lock.SessionTTL)
	if err != nil {
		return err
	}
	defer lock.Release(context.WithoutCancel(ctx), lease, s.log)
	ctx = lease.Context()

	epoch, err := s.d.Store.AcquireEpoch(ctx, req.AccountID, req.SessionID)
	if errors.Is(err, store.ErrNotFound) {
		return s.complete(ctx, req, contract.StatusSkipped, contract.ReasonNoMessages, nil, 0, 0)
	}
	if err != nil {
		return err
	}
	archives, err := s.d.Store.Archives(ctx, req.AccountID, req.SessionID)
	if err != nil {
		return err
	}
	redelivered := false
	for _, a := range archives {
		if a.State == store.StateArchived {
			// An earlier attempt may have stopped before invalidating the session cache.
			if err := s.d.Sessions.Invalidate(ctx, req.AccountID, req.SessionID); err != nil {
				return err
			}
		}
		if a.State == store.StateArchived || a.State == store.StateExtracted {
			if err := s.advance(ctx, epoch, a); err != nil {
				return fmt.Errorf("resume archive %s: %w", a.ID, err)
			}
		}
		redelivered = redelivered || (a.RequestID == req.RequestID && req.RequestID != "")
	}
	if redelivered {
		// This request made its archive already (a redelivery, or a resume just finished
		// above) and its commit_completed is in the outbox: nothing more to do, and no
		// second, contradicting "skipped" completion for the same request.
		return nil
	}
	sess, err := s.d.Store.GetSession(ctx, req.AccountID, req.SessionID)
	if err != nil {
		return err
	}
	keep := 0
	if req.Kind == contract.CommitAuto {
		keep = s.cfg.KeepRecent
		if sess.KeepRecent != nil {
			keep = *sess.KeepRecent
		}
	}
	if req.KeepRecent != nil {
		keep = *req.KeepRecent
	}
	from := sess.ArchivedUpto + 1
	to := min(req.Upto, sess.NextSeq-1-int64(keep))
	if to < from {
		reason := contract.ReasonCommitNoArchive
		if sess.NextSeq-1 < from {
			reason = contract.ReasonNoMessages
		}
		return s.complete(ctx, req, contract.StatusSkipped, reason, nil, int(sess.PendingTokens), int(sess.PendingTokens))
	}
	a := store.Archive{
		ID: memory.ArchiveID(req.AccountID, req.SessionID, from, to), AccountID: req.AccountID, SessionID: req.SessionID,
		UserID: sess.UserID, AgentID: sess.AgentID, FromSeq: from, ToSeq: to, Kind: req.Kind, State: store.StateArchived, RequestID: req.RequestID,
	}
	created := s.event(contract.Event{
		EventID: eventID(contract.EventArchiveCreated, a.ID), Kind: contract.EventArchiveCreated,
		AccountID: a.AccountID, UserID: a.UserID, AgentID: a.AgentID, SessionID: a.SessionID, ArchiveID: a.ID, FromSeq: from, ToSeq: to,
	})
	if err := s.d.Store.CreateArchive(ctx, epoch, a, []store.OutboxEntry{created}); err != nil {
		return fmt.Errorf("create archive: %w", err)
	}
	// The archived messages left the active set: drop the session's hot cache. On failure
	// the request is retried, and the resume above invalidates again.
	if err := s.d.Sessions.Invalidate(ctx, req.AccountID, req.SessionID); err != nil {
		return err
	}
	s.archives(1)
	s.d.KickOutbox()
	return s.advance(ctx, epoch, a)
}

// advance moves an archive through extracted and indexed from whatever state it is in.
func (s *Service) advance(ctx context.Context, epoch int64, a store.Archive) error {
	cur, err := s.d.Store.GetArchive(ctx, a.AccountID, a.ID)
	if err != nil {
		return err
	}
	if cur.State == store.StateArchived {
		if err := s.extract(ctx, epoch, cur); err != nil {
			return fmt.Errorf("extract: %w", err)
		}
		if cur, err = s.d.Store.GetArchive(ctx, a.AccountID, a.ID); err != nil {
			return err
		}
	}
	if cur.State == store.StateExtracted {
		if err := s.index(ctx, epoch, cur); err != nil {
			return fmt.Errorf("index: %w", err)
		}
	}
	return nil
}

// complete queues a commit_completed event for a request that archived nothing.
func (s *Service) complete(ctx context.Context, req contract.CommitRequest, status, reason string, counts map[string]int, before, after int) error {
	ev := contract.Event{
		EventID: eventID(contract.EventCommitCompleted, req.RequestID), Kind: contract.EventCommitCompleted,
		AccountID: req.AccountID, UserID: req.UserID, AgentID: req.AgentID, SessionID: req.SessionID, RequestID: req.RequestID,
		Status: status, Reason: reason, Memories: counts, TokensBefore: before, TokensAfter: after,
	}
	if err := s.d.Store.QueueEvents(ctx, []store.OutboxEntry{s.event(ev)}); err != nil {
		return err
	}
	s.d.KickOutbox()
	s.completed.notify(ev)
	return nil
}
