package bus

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

func TestEnsureStreamsIsIdempotentUnderConcurrency(t *testing.T) {
	b := newTestBus(t) // already ran EnsureStreams once
	lim := DefaultStreamLimits()
	lim.TurnsMaxBytes, lim.CommitsMaxBytes = 32<<20, 16<<20
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- EnsureStreams(context.Background(), b.js, b.n, lim)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent EnsureStreams: %v", err)
		}
	}
	want := map[string]struct {
		retention jetstream.RetentionPolicy
		discard   jetstream.DiscardPolicy
		maxBytes  int64
		maxAge    time.Duration
	}{
		StreamTurns:   {jetstream.WorkQueuePolicy, jetstream.DiscardNew, 32 << 20, 0},
		StreamCommits: {jetstream.WorkQueuePolicy, jetstream.DiscardNew, 16 << 20, 0},
		StreamEvents:  {jetstream.InterestPolicy, jetstream.DiscardOld, -1, 0},
		StreamDLQ:     {jetstream.LimitsPolicy, jetstream.DiscardOld, -1, 30 * 24 * time.Hour},
	}
	for kind, w := range want {
		s, err := b.js.Stream(context.Background(), b.n.Stream(kind))
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		c := s.CachedInfo().Config
		if c.Retention != w.retention || c.Discard != w.discard || c.MaxBytes != w.maxBytes || c.MaxAge != w.maxAge ||
			c.Storage != jetstream.FileStorage || c.Duplicates != 10*time.Minute || c.Subjects[0] != b.n.streamSubjects(kind) {
			t.Errorf("%s config = retention %v discard %v maxbytes %d maxage %v storage %v dup %v subjects %v",
				kind, c.Retention, c.Discard, c.MaxBytes, c.MaxAge, c.Storage, c.Duplicates, c.Subjects)
		}
	}
}

func TestPublishDeduplicatesByMsgID(t *testing.T) {
	b := newTestBus(t)
	ctx := context.Background()
	subj := b.n.Turns("acme", "s1")
	first, err := PublishJSON(ctx, b.js, subj, "evt-1", map[string]int{"v": 1})
	if err != nil || first.Duplicate {
		t.Fatalf("first publish: %+v, %v", first, err)
	}
	again, err := PublishJSON(ctx, b.js, subj, "evt-1", map[string]int{"v": 1})
	if err != nil || !again.Duplicate || again.Sequence != first.Sequence {
		t.Fatalf("repeat publish: %+v, %v; want a duplicate of seq %d", again, err, first.Sequence)
	}
	if _, err := Publish(ctx, b.js, subj, "", []byte("x"), nil); err == nil {
		t.Fatal("publish without a msg id accepted")
	}
}
