package main

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"time"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
)

// ackedTurn names event k of session j, read back from a file of acked message ids.
var ackedTurn = regexp.MustCompile(`-s(\d+)-m(\d+)-[ua]$`)

// replay makes the deliveries a publisher and JetStream may make: every acked turn of --in
// again, shuffled, once with its own Nats-Msg-Id (JetStream's dedup window answers
// "duplicate") and once with a new one (as after the window, or from a publisher that lost
// its ack: ingest sees the same event twice); then, with --reorder N, N new events for each of
// --new-sessions new sessions of the same run, published in shuffled order (their message ids
// go to --out, for `stored`). Every copy must be stored once.
func replay(args []string) error {
	var c common
	fs := c.flagSet("replay")
	in := fs.String("in", "/out/acked.txt", "file of acked message ids to deliver again")
	out := fs.String("out", "/out/acked-reordered.txt", "file of the reordered new events' acked message ids")
	users := fs.Int("users", 10, "users the sessions belong to (as publish had it)")
	first := fs.Int("first-session", 50, "index of the first new session (after publish's)")
	newSessions := fs.Int("new-sessions", 0, "new sessions whose events go out of order")
	reorder := fs.Int("reorder", 0, "events of each new session")
	limit := fs.Int("limit", 0, "deliver at most this many acked turns again (0: all)")
	_ = fs.Parse(args)
	nc, js, names, err := connect(c)
	if err != nil {
		return err
	}
	defer nc.Close()
	acked, err := readAcked(*in)
	if err != nil {
		return err
	}
	type jk struct{ j, k int }
	seen := map[jk]bool{}
	var again []jk
	for _, a := range acked {
		m := ackedTurn.FindStringSubmatch(a[1])
		if m == nil {
			continue
		}
		j, _ := strconv.Atoi(m[1])
		k, _ := strconv.Atoi(m[2])
		if !seen[jk{j, k}] {
			seen[jk{j, k}] = true
			again = append(again, jk{j, k})
		}
	}
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	r.Shuffle(len(again), func(a, b int) { again[a], again[b] = again[b], again[a] })
	if *limit > 0 && len(again) > *limit {
		again = again[:*limit]
	}
	pub := func(ev contract.TurnEvent, msgID string) (dup bool, err error) {
		deadline := time.Now().Add(time.Minute)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			ack, err := bus.PublishJSON(ctx, js, names.Turns(c.account, ev.SessionID), msgID, ev)
			cancel()
			if err == nil {
				return ack.Duplicate, nil
			}
			if time.Now().After(deadline) {
				return false, fmt.Errorf("publish %s again: %w", ev.EventID, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	var sameID, newID, jsDup int
	for _, t := range again {
		ev := turn(c, t.j, t.k, *users, 5, r)
		dup, err := pub(ev, ev.EventID)
		if err != nil {
			return err
		}
		if dup {
			jsDup++
		}
		sameID++
		if _, err := pub(ev, ev.EventID+"-redelivered"); err != nil {
			return err
		}
		newID++
	}
	// New sessions, their events out of order.
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	var order []jk
	for j := *first; j < *first+*newSessions; j++ {
		for k := range *reorder {
			order = append(order, jk{j, k})
		}
	}
	r.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
	for _, t := range order {
		ev := turn(c, t.j, t.k, *users, 5, r)
		if _, err := pub(ev, ev.EventID); err != nil {
			return err
		}
		for _, m := range ev.Messages {
			fmt.Fprintln(w, ev.SessionID, m.MessageID)
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	printJSON(map[string]any{"replayed_same_id": sameID, "jetstream_duplicates": jsDup, "replayed_new_id": newID, "reordered_events": len(order)})
	return nil
}
