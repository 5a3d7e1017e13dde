package systemtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/testenv"
)

// busTenant is one API key connected to the bus the way the plugin connects: the key as the
// token, replies under the key's inbox prefix.
type busTenant struct {
	account, user, secret, session string
	userKey                        bool
	nc                             *nats.Conn
	violations                     atomic.Int64
}

func connectTenant(t *testing.T, url string, env interface {
	CreateKey(ctx context.Context, account, user, role, name string) (string, store.APIKey, error)
}, tn *busTenant) {
	t.Helper()
	role := store.RoleAdmin
	if tn.userKey {
		role = store.RoleUser
	}
	secret, key, err := env.CreateKey(context.Background(), tn.account, tn.user, role, "bus test")
	if err != nil {
		t.Fatal(err)
	}
	tn.nc, err = nats.Connect(url, nats.Token(secret), nats.CustomInboxPrefix(bus.InboxPrefix(key.ID)), nats.MaxReconnects(0),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrPermissionViolation) {
				tn.violations.Add(1)
			}
		}))
	if err != nil {
		t.Fatalf("%s/%s connects with its key: %v", tn.account, tn.user, err)
	}
	t.Cleanup(tn.nc.Close)
}

// TestBusTenantIsolationRandomised: 20 accounts, each with an admin key on the bus (and five of
// them with two user keys besides), store a secret through the bus and commit it; then every
// credential tries, at random, the others' subjects and RPCs: publishing their turns, calling
// their RPCs, reading their turns, the whole bus, the default inboxes and another key's
// replies, and asking its own account's RPCs for another tenant's user. Every attempt must be
// refused by the server or answered without foreign data; each tenant still finds its own.
func TestBusTenantIsolationRandomised(t *testing.T) {
	env, _ := startEmbedded(t, t.TempDir())
	n := env.Names
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 16))
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	var tenants []*busTenant
	for a := range 20 {
		account := fmt.Sprintf("acct%02d", a)
		tenants = append(tenants, &busTenant{account: account, user: "user0", session: "s-" + account,
			secret: fmt.Sprintf("zebra%d%09d", a, rng.IntN(1e9))})
		if a < 5 {
			for u := 1; u <= 2; u++ {
				tenants = append(tenants, &busTenant{account: account, user: fmt.Sprintf("user%d", u), userKey: true,
					secret: fmt.Sprintf("otter%d%d%09d", a, u, rng.IntN(1e9))})
			}
		}
	}
	for _, tn := range tenants {
		connectTenant(t, env.NATSURL, env.Store, tn)
	}
	// Each account's admin key publishes its secret as a turn and commits it, over the bus; user
	// keys post theirs over HTTP's store path equivalent: a turn of their own user, published by
	// the account's admin key (user keys publish no turns on the bus).
	admin := map[string]*busTenant{}
	for _, tn := range tenants {
		if !tn.userKey {
			admin[tn.account] = tn
		}
	}
	var wg sync.WaitGroup
	for _, tn := range tenants {
		wg.Go(func() {
			a := admin[tn.account]
			js, err := jetstream.New(a.nc)
			if err != nil {
				t.Error(err)
				return
			}
			session := "s-" + tn.account + "-" + tn.user
			ev := turnEvent(tn.account, tn.user, session, "My code word is "+tn.secret+" and I keep it in Lisbon.", "Noted.")
			if _, err := bus.PublishJSON(ctx, js, n.Turns(tn.account, session), ev.EventID, ev); err != nil {
				t.Errorf("%s publishes its own turn: %v", tn.account, err)
				return
			}
			var res contract.CommitResult
			req := contract.CommitRPCRequest{V: 1, RequestID: "c-" + session, UserID: tn.user, SessionID: session, Kind: "sync", Wait: true}
			if err := bus.Call(ctx, a.nc, n.RPC(tn.account, "commit"), req, &res); err != nil {
				t.Errorf("%s commits its own session: %v", tn.account, err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// callAs makes an RPC with tn's credential: the account subject for admin keys, the user's
	// for user keys. It returns the answer, or "" when the server refused or nobody answered.
	recallQuery := func(secret string) contract.RecallRequest {
		return contract.RecallRequest{V: 1, UserID: "user0", Query: "What is my code word " + secret + "?", Limit: 20}
	}
	request := func(tn *busTenant, subject string, body any, timeout time.Duration) (string, error) {
		data, _ := json.Marshal(body)
		msg, err := tn.nc.Request(subject, data, timeout)
		if err != nil {
			return "", err
		}
		return string(msg.Data), nil
	}
	ownSubject := func(tn *busTenant, op string) string {
		if tn.userKey {
			return n.UserRPC(tn.account, tn.user, op)
		}
		return n.RPC(tn.account, op)
	}

	// Each tenant finds its own secret (so the attempts below could have found one).
	for _, tn := range tenants {
		testenv.Eventually(t, 20*time.Second, 100*time.Millisecond, func() error {
			req := recallQuery(tn.secret)
			req.UserID = tn.user
			got, err := request(tn, ownSubject(tn, "recall"), req, 5*time.Second)
			if err != nil {
				return fmt.Errorf("%s/%s recalls its own: %w", tn.account, tn.user, err)
			}
			if !strings.Contains(got, tn.secret) {
				return fmt.Errorf("%s/%s does not find its own secret in %.300s", tn.account, tn.user, got)
			}
			return nil
		})
	}

	var attempts, refused, answered, foreign int
	const refuseWait = 100 * time.Millisecond
	for range 300 {
		thief, victim := tenants[rng.IntN(len(tenants))], tenants[rng.IntN(len(tenants))]
		if thief == victim || (!thief.userKey && thief.account == victim.account) {
			continue // an admin key acts for every user of its own account
		}
		attempts++
		before := thief.violations.Load()
		var got string
		var err error
		kind := rng.IntN(7)
		switch kind {
		case 0: // the victim's account's recall subject
			got, err = request(thief, n.RPC(victim.account, "recall"), recallQuery(victim.secret), refuseWait)
		case 1: // the victim's user's subject
			got, err = request(thief, n.UserRPC(victim.account, victim.user, "memories.list"), contract.MemoriesListRequest{V: 1, UserID: victim.user}, refuseWait)
		case 2: // its own subject, naming the victim's user
			req := recallQuery(victim.secret)
			req.UserID = victim.user
			got, err = request(thief, ownSubject(thief, "recall"), req, 5*time.Second)
		case 3: // publish into the victim's turns
			err = thief.nc.Publish(n.Turns(victim.account, "smuggled"), []byte(`{}`))
		case 4: // read the victim's turns, the whole bus, or every inbox
			subj := []string{n.Turns(victim.account, ">"), ">", "_INBOX.>", n.RPC(victim.account, ">")}[rng.IntN(4)]
			var sub *nats.Subscription
			if sub, err = thief.nc.SubscribeSync(subj); err == nil {
				_ = thief.nc.Flush()
				if m, merr := sub.NextMsg(refuseWait); merr == nil {
					got = string(m.Data)
				}
				_ = sub.Unsubscribe()
			}
		case 5: // the victim's admin RPCs
			got, err = request(thief, n.RPC(victim.account, "erase"), map[string]any{"v": 1, "user_id": victim.user}, refuseWait)
		case 6: // its own archive search for the victim's secret
			got, err = request(thief, ownSubject(thief, "archive.search"), map[string]any{"v": 1, "user_id": victim.user, "query": victim.secret}, 5*time.Second)
		}
		_ = thief.nc.Flush()
		if got != "" && strings.Contains(got, victim.secret) {
			foreign++
			t.Errorf("attempt %d by %s/%s: foreign data of %s/%s: %.300s", kind, thief.account, thief.user, victim.account, victim.user, got)
			continue
		}
		// A refusal is the server's violation on the connection; give it a moment to arrive.
		deadline := time.Now().Add(refuseWait)
		for thief.violations.Load() == before && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		switch {
		case thief.violations.Load() > before:
			refused++
		case got != "" || (err == nil && (kind == 2 || kind == 6)):
			answered++ // an answer about the thief's own tenant only
		default:
			t.Errorf("attempt %d by %s/%s on %s/%s: neither refused nor answered (err %v)", kind, thief.account, thief.user, victim.account, victim.user, err)
		}
	}
	t.Logf("bus tenancy: %d credentials, %d attempts: %d refused by the server, %d answered without foreign data, %d with foreign data",
		len(tenants), attempts, refused, answered, foreign)
	if foreign != 0 {
		t.Fatalf("%d answers carried another tenant's data", foreign)
	}
}
