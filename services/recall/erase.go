package recall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/memory"
	"github.com/membus/membus/pkg/projection"
	"github.com/membus/membus/pkg/store"
)

// Erase answers <p>.rpc.<account>.erase (docs/design.md §5 "Erasure"): a tombstone first, then the SQL
// rows (messages, archives, memories or their sources, digests, commit results, pending
// outbox rows), the vector points (memories, archived messages and their session contexts), the hot cache, and the
// copies in JetStream and the DLQ (purged by subject). Another user's session is not found.
// Erasing again is harmless: it re-runs every step.
func (s *Service) Erase(ctx context.Context, account string, req contract.EraseRequest) (contract.EraseResult, error) {
	res := contract.EraseResult{V: contract.Version, UserID: req.UserID, SessionID: req.SessionID}
	if req.UserID == "" {
		return res, fmt.Errorf("%w: user_id is required", errBadRequest)
	}
	if err := s.d.Store.WriteTombstone(ctx, account, req.UserID, req.SessionID); err != nil {
		return res, err
	}
	subjects := func(session string) []string {
		out := []string{s.d.Names.Commits(account, session)}
		for _, kind := range contract.EventKinds {
			out = append(out, s.d.Names.Event(kind, account, session))
		}
		return out
	}
	erased, err := s.d.Store.EraseData(ctx, account, req.UserID, req.SessionID, subjects)
	if err != nil {
		return res, fmt.Errorf("erase rows: %w", err)
	}
	res.Sessions = len(erased.Sessions)
	res.Messages, res.Archives, res.Memories = erased.Messages, erased.Archives, int64(len(erased.MemoryIDs))
	res.MemoriesKept, res.Summaries = erased.MemoriesKept, erased.Summaries

	points := append([]string{}, erased.MemoryIDs...)
	for session, ids := range erased.MessageIDs {
		for _, id := range ids {
			points = append(points, memory.ArchiveMessageID(account, session, id))
		}
	}
	var errs []error
	if len(points) > 0 {
		if err := s.d.Vectors.Delete(ctx, account, req.UserID, points); err != nil {
			errs = append(errs, fmt.Errorf("delete vectors: %w", err))
		}
	}
	// What the ids above do not name (the session contexts, derived from the archived messages),
	// then the compaction of an index that keeps deleted points in its files.
	dropped, err := projection.DropErased(ctx, s.d.Vectors, account, req.UserID, req.SessionID)
	if err != nil {
		errs = append(errs, fmt.Errorf("drop the erased points left and compact: %w", err))
	}
	res.Vectors = len(points) + dropped
	// memory_deleted for every memory the erasure removed (ids only), as forgetting one does.
	var events []store.OutboxEntry
	for _, id := range erased.MemoryIDs {
		ev := contract.Event{V: contract.Version, EventID: "evt-memory_deleted-" + bus.MsgID(id)[:32], Kind: contract.EventMemoryDeleted,
			AccountID: account, UserID: req.UserID, MemoryID: id, At: s.d.Now().UTC()}
		b, _ := json.Marshal(ev)
		events = append(events, store.OutboxEntry{ID: ev.EventID, Subject: s.d.Names.Event(ev.Kind, account, "_"), Payload: b})
	}
	// erased: other recall replicas drop the erased points from their local indexes (on the "_"
	// subject, like memory_deleted, so the purge below leaves it).
	erasedEv := contract.Event{V: contract.Version, EventID: "evt-erased-" + bus.MsgID(account, req.UserID, req.SessionID, s.d.Now().UTC().String())[:32],
		Kind: contract.EventErased, AccountID: account, UserID: req.UserID, SessionID: req.SessionID, At: s.d.Now().UTC()}
	if b, err := json.Marshal(erasedEv); err == nil {
		events = append(events, store.OutboxEntry{ID: erasedEv.EventID, Subject: s.d.Names.Event(erasedEv.Kind, account, "_"), Payload: b})
	}
	if len(events) > 0 {
		if err := s.d.Store.QueueEvents(ctx, events); err != nil {
			errs = append(errs, fmt.Errorf("queue memory_deleted and erased events: %w", err))
		}
		s.d.KickOutbox()
	}
	for _, session := range erased.Sessions {
		if err := s.d.Sessions.Invalidate(ctx, account, session); err != nil {
			errs = append(errs, fmt.Errorf("invalidate cache of %s: %w", session, err))
		}
		if err := s.d.Sessions.ForgetDedup(ctx, account, session, erased.MessageIDs[session]); err != nil {
			errs = append(errs, fmt.Errorf("dedup keys of %s: %w", session, err))
		}
	}
	purged, err := s.purgeStreams(ctx, account, erased.Sessions)
	res.Purged = purged
	if err != nil {
		errs = append(errs, err)
	}
	// A turn that ingest was applying while the rows went leaves an empty session row behind
	// (its messages are dropped for the tombstone); the purge above stopped any more.
	if err := s.d.Store.DropErasedSessionRows(ctx, account, req.UserID, erased.Sessions); err != nil {
		errs = append(errs, err)
	}
	// Last, once every row is gone: SQLite's WAL still holds older versions of the erased pages.
	if err := s.d.Store.Checkpoint(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		// SQL is already clean and the tombstone stands; the caller retries the erasure.
		return res, fmt.Errorf("erase (rows are gone, retry to finish): %w", err)
	}
	s.log.Info("erased", "account", account, "sessions", res.Sessions, "messages", res.Messages, "memories", res.Memories, "purged", res.Purged)
	return res, nil
}

// purgeStreams removes every JetStream copy of the sessions' turns, commit requests, events
// and dead letters, by subject, with secure delete (eraseSubject).
func (s *Service) purgeStreams(ctx context.Context, account string, sessions []string) (uint64, error) {
	if len(sessions) == 0 {
		return 0, nil
	}
	js, err := jetstream.New(s.d.NC)
	if err != nil {
		return 0, fmt.Errorf("purge: %w", err)
	}
	var purged uint64
	for _, session := range sessions {
		token := bus.SessionToken(session)
		for _, p := range []struct{ stream, subject string }{
			{bus.StreamTurns, s.d.Names.Turns(account, session)},
			{bus.StreamCommits, s.d.Names.Commits(account, session)},
			{bus.StreamEvents, s.d.Names.Event("*", account, session)},
			{bus.StreamDLQ, s.d.Names.DLQ("*", account, token)},
		} {
			n, err := eraseSubject(ctx, js, s.d.Names.Stream(p.stream), p.subject)
			if err != nil {
				return purged, fmt.Errorf("purge %s of %s: %w", p.stream, p.subject, err)
			}
			purged += n
		}
	}
	return purged, nil
}

// eraseSubject removes every message of the stream on subject and returns how many there were.
// Each is removed with secure delete: a plain delete or purge only marks a message deleted, and
// its bytes stay in the stream's block file until the whole block goes; secure delete overwrites
// them with random bytes first. A purge of the subject then removes what was published meanwhile
// (a tombstoned session's turns are dropped by ingest anyway). Messages a work queue already
// removed on ack (TURNS, COMMITS) cannot be reached here: their bytes stay in their block file
// until every message of the block is acked and the file is deleted (docs/operations.md
// "Erasure on disk").
func eraseSubject(ctx context.Context, js jetstream.JetStream, stream, subject string) (uint64, error) {
	st, err := js.Stream(ctx, stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var n uint64
	for seq := uint64(1); ; {
		m, err := st.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return n, fmt.Errorf("find messages: %w", err)
		}
		seq = m.Sequence + 1
		if err := st.SecureDeleteMsg(ctx, m.Sequence); err != nil {
			// Gone meanwhile (acked from a work queue, or another replica's erasure) is fine.
			if _, gerr := st.GetMsg(ctx, m.Sequence); errors.Is(gerr, jetstream.ErrMsgNotFound) {
				continue
			}
			return n, fmt.Errorf("secure delete of message %d: %w", m.Sequence, err)
		}
		n++
	}
	if err := st.Purge(ctx, jetstream.WithPurgeSubject(subject)); err != nil {
		return n, err
	}
	return n, nil
}
