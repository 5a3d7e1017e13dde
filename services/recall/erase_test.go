package recall

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/membus/membus/pkg/testenv"
)

// TestEraseSubjectLeavesNoBytesInTheStream: eraseSubject removes every message of the erased
// subject, and their bytes are in no file of the JetStream store, although the block they were
// written in keeps other subjects' messages (which a plain purge would leave in the file, only
// marked deleted). The other subjects' messages stay, readable.
func TestEraseSubjectLeavesNoBytesInTheStream(t *testing.T) {
	const gone, kept = "GoneMarker0c4f", "KeptMarker8e21"
	for _, tc := range []struct {
		name      string
		retention jetstream.RetentionPolicy
		erase     string // the subject (filter) erased
	}{
		{"limits stream (the DLQ): one session's letters", jetstream.LimitsPolicy, "t.x.acme.s1"},
		{"work queue (TURNS) with turns not yet consumed", jetstream.WorkQueuePolicy, "t.x.acme.s1"},
		{"a wildcard over kinds (EVENTS)", jetstream.InterestPolicy, "t.*.acme.s1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, nc := testenv.NATS(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			js, err := jetstream.New(nc)
			if err != nil {
				t.Fatal(err)
			}
			st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}, Retention: tc.retention, Storage: jetstream.FileStorage})
			if err != nil {
				t.Fatal(err)
			}
			if tc.retention == jetstream.InterestPolicy { // an interest stream keeps messages only while a consumer wants them
				if _, err := st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "c", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
					t.Fatal(err)
				}
			}
			// Interleaved, so the erased messages share a block with the kept ones.
			var want uint64
			for i, subject := range []string{"t.x.acme.s1", "t.x.acme.s2", "t.y.acme.s1", "t.x.acme.s1", "t.y.acme.s2"} {
				text := kept
				if matches(tc.erase, subject) {
					text = gone
					want++
				}
				if _, err := js.Publish(ctx, subject, fmt.Appendf(nil, `{"n":%d,"text":"%s"}`, i, text)); err != nil {
					t.Fatal(err)
				}
			}
			n, err := eraseSubject(ctx, js, "T", tc.erase)
			if err != nil {
				t.Fatal(err)
			}
			if n != want {
				t.Errorf("erased %d messages, want %d", n, want)
			}
			if got := testenv.FilesHolding(t, srv.StoreDir(), gone); len(got) != 0 {
				t.Errorf("the erased messages' text is still in %v", got)
			}
			if got := testenv.FilesHolding(t, srv.StoreDir(), kept); len(got) == 0 {
				t.Error("the kept messages' text is in no file")
			}
			info, err := st.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if left := info.State.Msgs; left != 5-want {
				t.Errorf("%d messages left in the stream, want %d", left, 5-want)
			}
			if n, err := eraseSubject(ctx, js, "T", tc.erase); err != nil || n != 0 {
				t.Errorf("erasing again = %d, %v; want 0, nil", n, err)
			}
		})
	}
}

// matches reports whether subject matches filter, whose "*" tokens match any one token.
func matches(filter, subject string) bool {
	f, s := strings.Split(filter, "."), strings.Split(subject, ".")
	if len(f) != len(s) {
		return false
	}
	for i := range f {
		if f[i] != "*" && f[i] != s[i] {
			return false
		}
	}
	return true
}
