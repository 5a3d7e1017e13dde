package bus

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/membus/membus/pkg/testenv"
)

// testBus is an in-process JetStream server on a random port with the streams of prefix "t".
type testBus struct {
	url string
	nc  *nats.Conn
	js  jetstream.JetStream
	n   Names
}

func newTestBus(t *testing.T) testBus {
	t.Helper()
	s, _ := testenv.NATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, err := Connect(ctx, s.ClientURL(), "", t.Name())
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	n, err := NewNames("t")
	if err != nil {
		t.Fatal(err)
	}
	lim := DefaultStreamLimits()
	lim.TurnsMaxBytes, lim.CommitsMaxBytes, lim.Duplicates = 64<<20, 64<<20, time.Minute
	if err := EnsureStreams(ctx, js, n, lim); err != nil {
		t.Fatalf("EnsureStreams: %v", err)
	}
	return testBus{url: s.ClientURL(), nc: nc, js: js, n: n}
}

// eventually waits until cond holds (testenv.Eventually, every 10 ms).
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testenv.Eventually(t, timeout, 10*time.Millisecond, func() error {
		if !cond() {
			return errors.New("waiting for: " + what)
		}
		return nil
	})
}
