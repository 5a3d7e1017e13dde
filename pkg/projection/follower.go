package projection

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/vector"
)

// ErrBehind: the follower could not catch up with the event stream in time; a recall answered
// now may miss the newest commits (recall says degraded).
var ErrBehind = errors.New("projection: the local index is behind the event stream")

// Follower keeps a process's local index current with what other processes commit: it reads
// every event of MEMBUS_EVENTS from the moment it starts (an ordered consumer of its own),
// rebuilds the index from SQL once that consumer exists, then applies each event by reading
// SQL (the truth) — a commit_completed indexes its archive, memory_upserted and
// summary_created index a memory row, memory_superseded and memory_deleted drop a point.
// Applying an event twice, or out of date, is harmless: each step makes the index agree with
// SQL as it is now. Sync is the read barrier a recall replica calls before it searches.
//
// Only processes that search a local index of their own need a follower (recall replicas
// without Qdrant): a shared Qdrant is written once by extract, and `membus up` has one process.
type Follower struct {
	js    jetstream.JetStream
	names bus.Names
	d     Deps
	local *vector.Local
	log   *slog.Logger

	cons    jetstream.Consumer
	ready   chan struct{} // closed once the consumer exists and the rebuild is done
	applied atomic.Uint64 // stream sequence of the newest event applied
	mu      sync.Mutex
	wake    chan struct{} // closed and replaced whenever applied moves
	lag     atomic.Int64  // events delivered but not applied yet (for metrics)
}

// NewFollower builds a follower of local; Run starts it.
func NewFollower(js jetstream.JetStream, names bus.Names, d Deps, local *vector.Local, log *slog.Logger) *Follower {
	if log == nil {
		log = slog.Default()
	}
	return &Follower{js: js, names: names, d: d, local: local, log: log, ready: make(chan struct{}), wake: make(chan struct{})}
}

// Run follows the event stream until ctx is done. The consumer is created before the rebuild
// from SQL, so no event published meanwhile is missed (an interest stream keeps only what a
// consumer wants).
func (f *Follower) Run(ctx context.Context) error {
	cons, err := f.consumer(ctx)
	if err != nil {
		return fmt.Errorf("follow events: %w", err)
	}
	f.cons = cons
	info, err := cons.Info(ctx)
	if err != nil {
		return fmt.Errorf("follow events: %w", err)
	}
	f.applied.Store(info.Delivered.Stream) // where the consumer starts: everything before is in SQL
	if err := Reconcile(ctx, f.d, f.local, f.log); err != nil {
		return fmt.Errorf("rebuild the local index before following: %w", err)
	}
	close(f.ready)
	it, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("follow events: %w", err)
	}
	go func() {
		<-ctx.Done()
		it.Stop()
	}()
	for {
		msg, err := it.Next()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return nil
			}
			if errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrConsumerNotFound) {
				// Only the replicated stream's consumer can go (the ordered one is recreated by
				// the client): stop, so the process restarts and rebuilds rather than serve stale.
				return fmt.Errorf("follow events: %w", err)
			}
			f.log.Warn("event follower: next event", "err", err)
			continue
		}
		md, err := msg.Metadata()
		if err != nil {
			continue
		}
		f.lag.Store(int64(md.NumPending))
		for attempt := 0; ; attempt++ {
			err := f.apply(ctx, msg.Data())
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return nil
			}
			// SQL or the index failed: retry this event (Sync reports the replica behind meanwhile).
			f.log.Warn("event follower: apply failed, retrying", "subject", msg.Subject(), "attempt", attempt+1, "err", err)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(min(time.Duration(attempt+1)*200*time.Millisecond, 5*time.Second)):
			}
		}
		f.applied.Store(md.Sequence.Stream)
		f.mu.Lock()
		close(f.wake)
		f.wake = make(chan struct{})
		f.mu.Unlock()
	}
}

// consumer creates the follower's consumer of the event stream, delivering only new events.
// On an unreplicated stream it is an ordered consumer (R1, in memory, recreated by the client
// after a gap). A replicated interest stream (deploy/ runs R3) refuses a consumer whose replicas
// differ from the stream's, so there it is an ephemeral consumer that inherits the stream's
// replicas (and so survives the loss of a NATS node), without acks, removed by the server
// once it has had no client for ten minutes.
func (f *Follower) consumer(ctx context.Context) (jetstream.Consumer, error) {
	name := f.names.Stream(bus.StreamEvents)
	filter := []string{f.names.EventFilter("*")}
	s, err := f.js.Stream(ctx, name)
	if err != nil {
		return nil, err
	}
	if s.CachedInfo().Config.Replicas <= 1 {
		return f.js.OrderedConsumer(ctx, name, jetstream.OrderedConsumerConfig{FilterSubjects: filter, DeliverPolicy: jetstream.DeliverNewPolicy})
	}
	return s.CreateConsumer(ctx, jetstream.ConsumerConfig{FilterSubjects: filter, DeliverPolicy: jetstream.DeliverNewPolicy,
		AckPolicy: jetstream.AckNonePolicy, InactiveThreshold: 10 * time.Minute})
}

// apply makes the index agree with SQL about what one event names.
func (f *Follower) apply(ctx context.Context, data []byte) error {
	var ev contract.Event
	if err := json.Unmarshal(data, &ev); err != nil {
		return nil // not an event of ours: nothing to apply
	}
	switch ev.Kind {
	case contract.EventCommitCompleted:
		if ev.ArchiveID == "" {
			return nil // a commit that archived nothing
		}
		a, err := f.d.Store.GetArchive(ctx, ev.AccountID, ev.ArchiveID)
		if err != nil {
			return ignoreGone(err)
		}
		return IndexArchive(ctx, f.d, a)
	case contract.EventMemoryUpserted:
		return IndexMemory(ctx, f.d, ev.AccountID, ev.UserID, ev.MemoryID)
	case contract.EventSummaryCreated:
		return IndexMemory(ctx, f.d, ev.AccountID, ev.UserID, ev.SummaryID)
	case contract.EventMemorySuperseded, contract.EventMemoryDeleted:
		return f.d.Vectors.Delete(ctx, ev.AccountID, ev.UserID, []string{ev.MemoryID})
	case contract.EventErased:
		_, err := DropErased(ctx, f.d.Vectors, ev.AccountID, ev.UserID, ev.SessionID)
		return err
	}
	return nil
}

// DropErased deletes from an index every point of an erased user, or, for one erased session,
// the points of its archived messages and its session context (its memories have
// memory_deleted events of their own),
// then compacts the user's partition of an index that keeps deleted points in its files
// (vector.Compactor), so nothing erased stays readable there. It returns how many points it
// deleted.
func DropErased(ctx context.Context, v vector.Store, account, user, session string) (int, error) {
	n, err := dropErased(ctx, v, account, user, session)
	if err != nil {
		return n, err
	}
	if c, ok := v.(vector.Compactor); ok {
		return n, c.Compact(ctx, account, user)
	}
	return n, nil
}

func dropErased(ctx context.Context, v vector.Store, account, user, session string) (int, error) {
	f := vector.Filter{AccountID: account, UserID: user}
	if session != "" {
		f.Kinds = []string{contract.KindArchive, KindContext}
	}
	var ids []string
	for after := ""; ; {
		pts, next, err := v.Scroll(ctx, f, after, 500)
		if err != nil {
			return 0, err
		}
		for _, p := range pts {
			if session == "" || p.Payload["session_id"] == session {
				ids = append(ids, p.ID)
			}
		}
		if next == "" {
			break
		}
		after = next
	}
	if len(ids) == 0 {
		return 0, nil
	}
	if err := v.Delete(ctx, account, user, ids); err != nil {
		return 0, err
	}
	return len(ids), nil
}

// Sync returns once every event published before the call is applied, or ErrBehind after
// timeout (or when the follower has not started).
func (f *Follower) Sync(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	select {
	case <-f.ready:
	case <-ctx.Done():
		return fmt.Errorf("%w: still rebuilding from SQL", ErrBehind)
	}
	for {
		f.mu.Lock()
		wake := f.wake
		f.mu.Unlock()
		info, err := f.cons.Info(ctx)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrBehind, err)
		}
		// Caught up: nothing left for the consumer to deliver, and what it delivered is applied.
		if info.NumPending == 0 && f.applied.Load() >= info.Delivered.Stream {
			return nil
		}
		select {
		case <-wake:
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			return fmt.Errorf("%w: applied event %d, %d more to come", ErrBehind, f.applied.Load(), info.NumPending)
		}
	}
}

// Lag is the number of events delivered to the follower and not applied yet.
func (f *Follower) Lag() int64 { return f.lag.Load() }

func ignoreGone(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return nil // erased since: nothing to index
	}
	return err
}
