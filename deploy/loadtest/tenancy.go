package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"regexp"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
)

// keyIDPattern reads the id of a membus API key (mbk_<id>_<secret>).
var keyIDPattern = regexp.MustCompile(`^mbk_([0-9a-f]{16})_[0-9a-f]+$`)

// tenancy checks the cluster's binding of API keys to tenants (docs/design.md §3).
func tenancy(args []string) error {
	fs := flag.NewFlagSet("tenancy", flag.ExitOnError)
	var c common
	c.flags(fs)
	key := fs.String("key", "", "an admin API key of --account")
	other := fs.String("other", "", "another account, whose subjects the key must not reach")
	_ = fs.Parse(args)
	m := keyIDPattern.FindStringSubmatch(*key)
	if m == nil || *other == "" || *other == c.account {
		return errors.New("tenancy needs --key (an admin key of --account) and --other (another account)")
	}
	names, err := bus.NewNames(c.prefix)
	if err != nil {
		return err
	}
	var violations atomic.Int64
	nc, err := nats.Connect(c.natsURL, nats.Name("loadtest-tenancy"), nats.Token(*key), nats.CustomInboxPrefix(bus.InboxPrefix(m[1])),
		nats.MaxReconnects(0), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrPermissionViolation) {
				violations.Add(1)
			}
		}))
	if err != nil {
		return fmt.Errorf("connect with the key of %s: %w", c.account, err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res := map[string]any{}

	// Its own account: a turn published and acked by JetStream, an RPC answered.
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	at := time.Now().UTC()
	ev := contract.TurnEvent{V: contract.Version, AccountID: c.account, UserID: "tenancy", AgentID: "main", SessionID: "tenancy-" + c.run,
		Source: "loadtest", SentAt: at, Messages: []contract.Message{{MessageID: "tenancy-" + c.run, Role: contract.RoleUser,
			Parts: []contract.Part{{Type: contract.PartText, Text: "The bus binds my key to my account."}}, CreatedAt: at}}}
	ev.EventID = bus.MsgID(c.account, ev.SessionID, c.run)
	if _, err := bus.PublishJSON(ctx, js, names.Turns(c.account, ev.SessionID), ev.EventID, ev); err != nil {
		return fmt.Errorf("publish a turn of its own account: %w", err)
	}
	res["own_turn"] = "acked"
	data, _ := json.Marshal(contract.RecallRequest{V: 1, UserID: "tenancy", Query: "bus"})
	if _, err := nc.Request(names.RPC(c.account, "recall"), data, 10*time.Second); err != nil {
		return fmt.Errorf("an RPC of its own account: %w", err)
	}
	res["own_rpc"] = "answered"

	// Everything else: each attempt must draw the cluster's permissions violation.
	attempts := []struct {
		name string
		do   func() error
	}{
		{"publish another account's turn", func() error { return nc.Publish(names.Turns(*other, "s"), []byte("{}")) }},
		{"call another account's RPC", func() error {
			_, err := nc.Request(names.RPC(*other, "recall"), data, 300*time.Millisecond)
			if errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrNoResponders) {
				return nil
			}
			return err
		}},
		{"read another account's turns", func() error { _, err := nc.SubscribeSync(names.Turns(*other, ">")); return err }},
		{"read the whole bus", func() error { _, err := nc.SubscribeSync(">"); return err }},
		{"read every reply inbox", func() error { _, err := nc.SubscribeSync("_INBOX.>"); return err }},
		{"use the JetStream API", func() error { return nc.Publish("$JS.API.STREAM.LIST", nil) }},
	}
	refused := 0
	for _, a := range attempts {
		before := violations.Load()
		if err := a.do(); err != nil && !errors.Is(err, nats.ErrPermissionViolation) {
			return fmt.Errorf("%s: %w", a.name, err)
		}
		_ = nc.Flush()
		deadline := time.Now().Add(2 * time.Second)
		for violations.Load() == before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if violations.Load() == before {
			return fmt.Errorf("%s: not refused by the cluster", a.name)
		}
		refused++
	}
	res["attempts"], res["refused"] = len(attempts), refused

	// Credentials that must not connect at all.
	for name, opt := range map[string]nats.Option{"bad_key": nats.Token("mbk_0000000000000000_00"), "token_alone": nats.Token(c.token)} {
		bad, err := nats.Connect(c.natsURL, opt, nats.MaxReconnects(0))
		if err == nil {
			bad.Close()
			return fmt.Errorf("%s connected", name)
		}
		res[name] = "refused"
	}
	printJSON(res)
	return nil
}
