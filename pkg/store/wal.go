package store

import (
	"context"
	"time"
)

// SQLite's write path. SQLite lets one transaction write at a time; a connection that finds
// the lock taken waits in the busy handler, which sleeps 1, 2, 5, 10, 15, 20, 25… ms between
// tries, so a writer queued behind a 20 ms transaction started a few milliseconds to tens of
// milliseconds after it ended. The write transactions of this process (inTx) therefore queue
// on a gate of their own, which hands the lock over the moment the one before commits; other
// processes, and this process's few writes outside inTx, still meet the busy handler.
//
// Checkpoints (the WAL copied back into the database file) would run inside a COMMIT
// (wal_autocheckpoint), holding the gate through their page writes and fsync. They run on a
// goroutine of their own instead (walCheckpointer), beside the next transaction.

// walCheckpointEvery is the least time between two background checkpoints: each copies every
// page the WAL changed since the one before once, however often it was rewritten.
const walCheckpointEvery = 200 * time.Millisecond

// walCheckpointIdle is the most time between two background checkpoints.
const walCheckpointIdle = 10 * time.Second

// walMaxFrames is the WAL's length (4 KiB pages) past which a checkpoint takes the write gate:
// a checkpoint beside a writer cannot restart the WAL from its beginning, so under a steady
// stream of transactions the WAL would otherwise grow without end.
const walMaxFrames = 16384

// lockWrites takes the write gate (SQLite; nothing on MySQL) and returns its release.
func (s *Store) lockWrites(ctx context.Context) (func(), error) {
	if s.writeGate == nil {
		return func() {}, nil
	}
	select {
	case s.writeGate <- struct{}{}:
		return func() { <-s.writeGate }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// walCommitted tells the checkpointer that a transaction committed.
func (s *Store) walCommitted() {
	if s.walKick == nil {
		return
	}
	select {
	case s.walKick <- struct{}{}:
	default:
	}
}

// startWALCheckpointer starts the background checkpoints of an SQLite store (wal_autocheckpoint
// is off on its connections); Close stops it.
func (s *Store) startWALCheckpointer() {
	s.writeGate = make(chan struct{}, 1)
	s.walKick = make(chan struct{}, 1)
	s.walStop = make(chan struct{})
	s.walDone = make(chan struct{})
	go s.walCheckpointer()
}

// walCheckpointer checkpoints (PASSIVE: beside readers and writers) after commits, at most
// every walCheckpointEvery and at least every walCheckpointIdle, and holding the write gate
// once the WAL passed walMaxFrames.
func (s *Store) walCheckpointer() {
	defer close(s.walDone)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-s.walStop
		cancel()
	}()
	// The ticker covers writes outside inTx (which do not kick): a checkpoint with nothing to
	// copy costs a read of the WAL index.
	tick := time.NewTicker(walCheckpointIdle)
	defer tick.Stop()
	last := time.Time{}
	for {
		select {
		case <-s.walStop:
			return
		case <-s.walKick:
		case <-tick.C:
		}
		if wait := walCheckpointEvery - time.Since(last); wait > 0 {
			select {
			case <-s.walStop:
				return
			case <-time.After(wait):
			}
		}
		last = time.Now()
		frames, err := s.walCheckpoint(ctx)
		if err == nil && frames > walMaxFrames {
			if unlock, err := s.lockWrites(ctx); err == nil {
				_, _ = s.walCheckpoint(ctx)
				unlock()
			}
		}
	}
}

// walCheckpoint runs one PASSIVE checkpoint and returns the WAL's length in frames. An error
// (a busy database, the store closing) leaves the frames to the next one.
func (s *Store) walCheckpoint(ctx context.Context) (frames int, err error) {
	var busy, checkpointed int
	err = s.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &checkpointed)
	return frames, err
}

// stopWALCheckpointer stops the checkpointer (Close, which may be called more than once); SQLite checkpoints what is left when
// the last connection closes.
func (s *Store) stopWALCheckpointer() {
	if s.walStop == nil {
		return
	}
	s.walStopOnce.Do(func() { close(s.walStop) })
	<-s.walDone
}
