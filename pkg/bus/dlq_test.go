package bus

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/membus/membus/pkg/contract"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestDeadLetterListGetReplay(t *testing.T) {
	b := newTestBus(t)
	ctx := context.Background()
	mk := func(session string, seq uint64, data string) *Msg {
		return &Msg{Subject: b.n.Turns("acme", session), Data: []byte(data), Stream: StreamTurns, StreamSeq: seq,
			Account: "acme", SessionToken: SessionToken(session),
			Header: nats.Header{jetstream.MsgIDHeader: []string{"evt-" + session}, "Membus-Trace": []string{"t1"}}}
	}
	m1 := mk("s1", 7, `{"v":1}`)
	if err := PublishDeadLetter(ctx, b.js, b.n, m1, StreamTurns, "schema: missing messages\nline two", 5); err != nil {
		t.Fatal(err)
	}
	// Dead-lettering the same delivery again (a crash before Term) stores one letter.
	if err := PublishDeadLetter(ctx, b.js, b.n, m1, StreamTurns, "again", 5); err != nil {
		t.Fatal(err)
	}
	if err := PublishDeadLetter(ctx, b.js, b.n, mk("s2", 8, "not json"), StreamTurns, "decode", 1); err != nil {
		t.Fatal(err)
	}

	all, err := ListDLQ(ctx, b.js, b.n, "", 0)
	if err != nil || len(all) != 2 {
		t.Fatalf("ListDLQ = %d letters, %v; want 2 (the repeat is deduplicated)", len(all), err)
	}
	one, err := ListDLQ(ctx, b.js, b.n, b.n.DLQ(StreamTurns, "acme", "s2"), 10)
	if err != nil || len(one) != 1 || one[0].PayloadText != "not json" {
		t.Fatalf("filtered ListDLQ = %+v, %v", one, err)
	}
	if lim, _ := ListDLQ(ctx, b.js, b.n, "", 1); len(lim) != 1 {
		t.Errorf("limit 1 returned %d", len(lim))
	}
	if _, err := ListDLQ(ctx, b.js, b.n, "t.turns.>", 10); err == nil {
		t.Error("a filter outside the DLQ was accepted")
	}

	dl, err := GetDLQ(ctx, b.js, b.n, all[0].Seq)
	if err != nil {
		t.Fatal(err)
	}
	if dl.Reason != "schema: missing messages line two" || dl.Failures != 5 || dl.OriginalSubject != m1.Subject ||
		dl.Stream != StreamTurns || string(dl.Payload) != `{"v":1}` || dl.DLQSeq != dl.Seq || time.Since(dl.At) > time.Minute {
		t.Errorf("GetDLQ = %+v", dl.DLQEnvelope)
	}
	if _, err := GetDLQ(ctx, b.js, b.n, 999); !errors.Is(err, ErrDLQNotFound) {
		t.Errorf("GetDLQ(999) err = %v, want ErrDLQNotFound", err)
	}

	if err := ReplayDLQ(ctx, b.js, b.n, dl.Seq); err != nil {
		t.Fatal(err)
	}
	s, _ := b.js.Stream(ctx, b.n.Stream(StreamTurns))
	raw, err := s.GetLastMsgForSubject(ctx, m1.Subject)
	if err != nil {
		t.Fatalf("replayed message not on %s: %v", m1.Subject, err)
	}
	if raw.Header.Get(jetstream.MsgIDHeader) != "replay-1-evt-s1" || string(raw.Data) != `{"v":1}` ||
		raw.Header.Get("Membus-Trace") != "t1" || raw.Header.Get(contract.HeaderDLQReason) != "" {
		t.Errorf("replayed message headers %v data %s", raw.Header, raw.Data)
	}
	if _, err := GetDLQ(ctx, b.js, b.n, dl.Seq); !errors.Is(err, ErrDLQNotFound) {
		t.Errorf("letter still in the DLQ after replay: %v", err)
	}
	if left, _ := ListDLQ(ctx, b.js, b.n, "", 10); len(left) != 1 {
		t.Errorf("%d letters left, want 1", len(left))
	}
}

func TestListDLQEmpty(t *testing.T) {
	b := newTestBus(t)
	dls, err := ListDLQ(context.Background(), b.js, b.n, "", 10)
	if err != nil || len(dls) != 0 {
		t.Fatalf("ListDLQ on an empty DLQ = %v, %v", dls, err)
	}
}
