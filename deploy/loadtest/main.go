// Command loadtest drives and checks a running membus: the distributed stack of
// deploy/docker-compose.yml for scripts/deploy-test.sh (inside the compose network, a FROM
// scratch image, so it reaches the NATS nodes, MariaDB and the services by name), and `membus
// up` for scripts/chaos.sh and scripts/soak.sh (--nats, --token and --dsn name it; --dsn
// sqlite:<data dir>/membus.db reads the embedded SQLite file, read-only):
//
//	loadtest publish  — turn events over NATS from many sessions, paced, retrying each publish
//	                    with the same Nats-Msg-Id until it is acked; writes the acked ids
//	loadtest stored   — waits for ingest to drain, then counts each acked message in SQL
//	                    (stored exactly once, duplicates, lost)
//	loadtest commit   — commits every session with wait:true (the commit RPC)
//	loadtest recall   — recalls every active user memory in SQL by its text and counts hits
//	loadtest erase    — erases one user, then checks SQL and recall hold none of it
//	loadtest drain    — times how fast ingest stores a backlog (the scale-out figure)
//	loadtest leader   — prints the NATS node leading the turns stream (the one to kill)
//	loadtest tenancy  — with one account's API key, as the plugin connects: its own turns and
//	                    RPCs work, every other account's subject and the bus's internals are
//	                    refused by the cluster, and a bad key or the bare token cannot connect
//	loadtest replay   — re-publishes acked turns (same ids, shuffled) and new ones out of order
//	loadtest abuse    — malformed and oversized payloads on every subject, RPC and HTTP route
//	loadtest tenants  — a marker per account, then every account's answers checked for the others'
//	loadtest inflight — archives caught between archived and indexed (after a kill -9)
//	loadtest dlq      — the run's dead letters by reason, split into expected and good data
//	loadtest soak     — bounded load while sampling RSS, goroutines and open files; flat or not
//
// Every subcommand prints one JSON object on stdout as its last line.
package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	_ "modernc.org/sqlite"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
)

type common struct {
	natsURL, token, prefix, account, dsn, run string
}

func (c *common) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.natsURL, "nats", env("MEMBUS_NATS_URL", "nats://nats-1:4222,nats://nats-2:4222,nats://nats-3:4222"), "NATS URLs")
	fs.StringVar(&c.token, "token", os.Getenv("MEMBUS_NATS_TOKEN"), "NATS token")
	fs.StringVar(&c.prefix, "prefix", env("MEMBUS_SUBJECT_PREFIX", "membus"), "subject prefix")
	fs.StringVar(&c.account, "account", "loadtest", "account id")
	fs.StringVar(&c.dsn, "dsn", os.Getenv("MEMBUS_MYSQL_DSN"), "MySQL DSN, or sqlite:<path of membus.db> (read-only)")
	fs.StringVar(&c.run, "run", "r1", "run id: prefixes sessions, users and message ids")
}

// flagSet is the flag set of one subcommand with the common flags on c.
func (c *common) flagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	c.flags(fs)
	return fs
}

func env(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: loadtest publish|stored|commit|recall|erase|drain|leader|tenancy|replay|abuse|tenants|inflight|dlq|soak [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "publish":
		err = publish(os.Args[2:])
	case "stored":
		err = stored(os.Args[2:])
	case "commit":
		err = commitAll(os.Args[2:])
	case "recall":
		err = recall(os.Args[2:])
	case "erase":
		err = erase(os.Args[2:])
	case "drain":
		err = drain(os.Args[2:])
	case "leader":
		err = leader(os.Args[2:])
	case "tenancy":
		err = tenancy(os.Args[2:])
	case "replay":
		err = replay(os.Args[2:])
	case "abuse":
		err = abuse(os.Args[2:])
	case "tenants":
		err = tenants(os.Args[2:])
	case "inflight":
		err = inflight(os.Args[2:])
	case "dlq":
		err = dlqReport(os.Args[2:])
	case "soak":
		err = soak(os.Args[2:])
	default:
		err = fmt.Errorf("unknown subcommand %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
}

func connect(c common) (*nats.Conn, jetstream.JetStream, bus.Names, error) {
	names, err := bus.NewNames(c.prefix)
	if err != nil {
		return nil, nil, names, err
	}
	opts := []nats.Option{nats.Name("loadtest"), nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond)}
	if c.token != "" {
		// membus's services' user: a cluster in API-key mode lets it bypass the callout; a
		// server in token mode checks the token.
		opts = append(opts, nats.Token(c.token), nats.UserInfo(bus.ServiceUser, c.token))
	}
	nc, err := nats.Connect(c.natsURL, opts...)
	if err != nil {
		return nil, nil, names, err
	}
	js, err := jetstream.New(nc)
	return nc, js, names, err
}

// openDB opens the deployment's SQL store to check it: MySQL, or with --dsn sqlite:<path> the
// embedded SQLite file, read-only (membus up keeps writing it; WAL lets both run).
func openDB(c common) (*sql.DB, error) {
	driver, dsn := "mysql", c.dsn
	if path, ok := strings.CutPrefix(c.dsn, "sqlite:"); ok {
		driver, dsn = "sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(8)
	return db, db.Ping()
}

func printJSON(v any) {
	b, _ := json.Marshal(v)
	fmt.Println(string(b))
}

// sessionID and userID of session j: 50 sessions over 10 users by default.
func sessionID(run string, j int) string { return fmt.Sprintf("%s-s%02d", run, j) }
func userID(run string, j, users int) string {
	return fmt.Sprintf("%s-u%02d", run, j%users)
}

var syllables = []string{"ka", "lo", "mi", "ru", "te", "sa", "no", "vi", "pe", "zu", "ga", "do", "fi", "ya", "be", "xo"}

func word(r *rand.Rand) string {
	var b strings.Builder
	for range 3 + r.IntN(2) {
		b.WriteString(syllables[r.IntN(len(syllables))])
	}
	return b.String()
}

// turn builds event k of session j: a user and an assistant message; every factEvery-th user
// message states a preference with made-up words (so heuristic extraction yields a memory
// with words no other memory has), the others are chatter the extractor ignores.
func turn(c common, j, k, users, factEvery int, r *rand.Rand) contract.TurnEvent {
	sess := sessionID(c.run, j)
	now := time.Now().UTC()
	user := "Could you tell me more about that, please?"
	if k%factEvery == 0 {
		user = fmt.Sprintf("I really love %s %s and %s.", word(r), word(r), word(r))
	}
	mid := fmt.Sprintf("%s-m%05d", sess, k)
	return contract.TurnEvent{V: 1, EventID: "ev-" + mid, AccountID: c.account, UserID: userID(c.run, j, users), SessionID: sess, Source: "loadtest",
		Messages: []contract.Message{
			{MessageID: mid + "-u", Role: "user", CreatedAt: now, Parts: []contract.Part{{Type: contract.PartText, Text: user}}},
			{MessageID: mid + "-a", Role: "assistant", Position: 1, CreatedAt: now, Parts: []contract.Part{{Type: contract.PartText, Text: "Sure, here is a short answer."}}},
		}, SentAt: now}
}

func publish(args []string) error {
	var c common
	fs := c.flagSet("publish")
	messages := fs.Int("messages", 20000, "turn messages (2 per event)")
	sessions := fs.Int("sessions", 50, "sessions")
	users := fs.Int("users", 10, "users the sessions belong to")
	rate := fs.Int("rate", 800, "messages/s offered (0: as fast as acks come)")
	factEvery := fs.Int("fact-every", 5, "every n-th user message states a fact")
	out := fs.String("out", "/out/acked.txt", "file of acked message ids")
	giveUp := fs.Duration("give-up", 2*time.Minute, "stop retrying one publish after this long")
	_ = fs.Parse(args)
	nc, js, names, err := connect(c)
	if err != nil {
		return err
	}
	defer nc.Close()
	events := *messages / 2
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	var mu sync.Mutex
	var acked, failed, retries atomic.Int64
	var tick <-chan time.Time
	if *rate > 0 {
		t := time.NewTicker(time.Second / time.Duration(max(1, *rate/2)))
		defer t.Stop()
		tick = t.C
	}
	start := time.Now()
	done := make(chan struct{})
	go func() { // progress, one line a second on stderr (deploy-test.sh waits on it)
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Second):
				fmt.Fprintf(os.Stderr, "progress acked=%d failed=%d retries=%d elapsed=%.0fs\n", 2*acked.Load(), 2*failed.Load(), retries.Load(), time.Since(start).Seconds())
			}
		}
	}()
	var wg sync.WaitGroup
	sessionChans := make([]chan int, *sessions)
	for j := range *sessions {
		sessWork := make(chan int, events / *sessions + 1)
		sessionChans[j] = sessWork
		wg.Add(1)
		go func() { // one publisher per session keeps its events in order
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(j), 42))
			for k := range sessWork {
				ev := turn(c, j, k, *users, *factEvery, r)
				deadline := time.Now().Add(*giveUp)
				for {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					_, err := bus.PublishJSON(ctx, js, names.Turns(c.account, ev.SessionID), ev.EventID, ev)
					cancel()
					if err == nil {
						acked.Add(1)
						mu.Lock()
						for _, m := range ev.Messages {
							fmt.Fprintln(w, ev.SessionID, m.MessageID)
						}
						mu.Unlock()
						break
					}
					if time.Now().After(deadline) {
						failed.Add(1)
						fmt.Fprintf(os.Stderr, "gave up on %s: %v\n", ev.EventID, err)
						break
					}
					retries.Add(1)
					time.Sleep(200 * time.Millisecond)
				}
			}
		}()
	}
	// Events go round-robin over the sessions, paced by the ticker.
	for i := range events {
		if tick != nil {
			<-tick
		}
		sessionChans[i%*sessions] <- i / *sessions
	}
	for _, ch := range sessionChans {
		close(ch)
	}
	wg.Wait()
	close(done)
	if err := w.Flush(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	el := time.Since(start).Seconds()
	printJSON(map[string]any{"acked": 2 * acked.Load(), "failed": 2 * failed.Load(), "retries": retries.Load(), "seconds": el})
	return nil
}

// pendingTurns is how many turn events the ingest consumer has not yet acked.
func pendingTurns(ctx context.Context, js jetstream.JetStream, names bus.Names) (uint64, error) {
	cons, err := js.Consumer(ctx, names.Stream(bus.StreamTurns), names.Consumer("ingest"))
	if err != nil {
		return 0, err
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return 0, err
	}
	return info.NumPending + uint64(info.NumAckPending), nil
}

func stored(args []string) error {
	var c common
	fs := c.flagSet("stored")
	in := fs.String("in", "/out/acked.txt", "files of acked message ids, comma-separated")
	wait := fs.Duration("wait", 5*time.Minute, "how long ingest may take to drain")
	_ = fs.Parse(args)
	nc, js, names, err := connect(c)
	if err != nil {
		return err
	}
	defer nc.Close()
	db, err := openDB(c)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx := context.Background()
	deadline := time.Now().Add(*wait)
	for {
		n, err := pendingTurns(ctx, js, names)
		if err == nil && n == 0 {
			break
		}
		if time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("ingest did not drain in %v: %w", *wait, err)
			}
			return fmt.Errorf("ingest did not drain in %v (pending %d)", *wait, n)
		}
		time.Sleep(time.Second)
	}
	ackedIDs := map[string]bool{}
	for _, path := range strings.Split(*in, ",") {
		acked, err := readAcked(path)
		if err != nil {
			return err
		}
		for _, a := range acked {
			ackedIDs[a[1]] = true
		}
	}
	rows, err := db.QueryContext(ctx, `SELECT message_id, COUNT(*) FROM messages WHERE account_id = ? AND message_id LIKE ? GROUP BY message_id`, c.account, c.run+"-%")
	if err != nil {
		return err
	}
	defer rows.Close()
	counts := map[string]int{}
	total := 0
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return err
		}
		counts[id] = n
		total += n
	}
	if err := rows.Err(); err != nil {
		return err
	}
	var storedOnce, dups, lost, extra int
	for id := range ackedIDs {
		switch n := counts[id]; {
		case n == 1:
			storedOnce++
		case n > 1:
			dups += n - 1
		default:
			lost++
		}
	}
	for id := range counts {
		if !ackedIDs[id] {
			extra++ // stored though its publish was never acked (a timeout that did land)
		}
	}
	archiveDups, memoryDups, err := derivedDuplicates(ctx, db, c)
	if err != nil {
		return err
	}
	printJSON(map[string]any{"acked": len(ackedIDs), "stored_rows": total, "stored_once": storedOnce, "duplicates": dups, "lost": lost, "stored_unacked": extra,
		"archive_overlaps": archiveDups, "memory_duplicates": memoryDups})
	return nil
}

// readAcked reads a file of acked messages: "<session> <message id>" per line.
func readAcked(path string) ([][2]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out [][2]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) == 2 {
			out = append(out, [2]string{fields[0], fields[1]})
		}
	}
	return out, sc.Err()
}

// derivedDuplicates counts what a replayed commit would write twice: pairs of archives of one
// session whose message ranges overlap (the same messages archived and extracted twice), and
// active memories of one user, scope and agent that share a content hash (one fact stored as
// two memories: deterministic ids and exact dedup exist to prevent both).
func derivedDuplicates(ctx context.Context, db *sql.DB, c common) (archives, memories int, err error) {
	if err = db.QueryRowContext(ctx, `SELECT COUNT(*) FROM archives a JOIN archives b
		ON a.account_id = b.account_id AND a.session_id = b.session_id AND a.id < b.id
		AND a.from_seq <= b.to_seq AND b.from_seq <= a.to_seq
		WHERE a.account_id = ? AND a.session_id LIKE ?`, c.account, c.run+"-%").Scan(&archives); err != nil {
		return 0, 0, fmt.Errorf("count overlapping archives: %w", err)
	}
	if err = db.QueryRowContext(ctx, `SELECT COALESCE(SUM(n - 1), 0) FROM (SELECT COUNT(*) AS n FROM memories
		WHERE account_id = ? AND user_id LIKE ? AND superseded_by IS NULL AND duplicate_of IS NULL AND valid_to_us IS NULL
		GROUP BY user_id, scope, agent_id, content_hash HAVING COUNT(*) > 1) d`, c.account, c.run+"-%").Scan(&memories); err != nil {
		return 0, 0, fmt.Errorf("count duplicate memories: %w", err)
	}
	return archives, memories, nil
}

func sessionsOf(ctx context.Context, db *sql.DB, c common) ([][2]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT session_id, user_id FROM sessions WHERE account_id = ? AND session_id LIKE ? ORDER BY session_id`, c.account, c.run+"-%")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][2]string
	for rows.Next() {
		var s, u string
		if err := rows.Scan(&s, &u); err != nil {
			return nil, err
		}
		out = append(out, [2]string{s, u})
	}
	return out, rows.Err()
}

func commitAll(args []string) error {
	var c common
	fs := c.flagSet("commit")
	idPrefix := fs.String("id", "final-", "request id prefix (a repeated id gets the stored result)")
	tries := fs.Int("tries", 5, "attempts per session")
	timeout := fs.Duration("timeout", 120*time.Second, "how long one attempt may wait")
	_ = fs.Parse(args)
	nc, _, names, err := connect(c)
	if err != nil {
		return err
	}
	defer nc.Close()
	db, err := openDB(c)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx := context.Background()
	sess, err := sessionsOf(ctx, db, c)
	if err != nil {
		return err
	}
	var ok, failed, memories atomic.Int64
	var mu sync.Mutex
	failedSessions := []string{}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for _, su := range sess {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			var res contract.CommitResult
			for attempt := 0; ; attempt++ {
				cctx, cancel := context.WithTimeout(ctx, *timeout)
				err := bus.Call(cctx, nc, names.RPC(c.account, "commit"), contract.CommitRPCRequest{V: 1, RequestID: *idPrefix + su[0],
					UserID: su[1], SessionID: su[0], Kind: contract.CommitSync, Wait: true, TimeoutMS: int((*timeout - time.Second).Milliseconds())}, &res)
				cancel()
				if err == nil && (res.Status == contract.StatusCompleted || res.OK) {
					ok.Add(1)
					for _, n := range res.Memories {
						memories.Add(int64(n))
					}
					return
				}
				if attempt == *tries-1 {
					failed.Add(1)
					mu.Lock()
					failedSessions = append(failedSessions, su[0])
					mu.Unlock()
					fmt.Fprintf(os.Stderr, "commit %s: %v %+v\n", su[0], err, res)
					return
				}
				time.Sleep(2 * time.Second)
			}
		}()
	}
	wg.Wait()
	var archives int
	_ = db.QueryRowContext(ctx, `SELECT COUNT(*) FROM archives WHERE account_id = ? AND session_id LIKE ?`, c.account, c.run+"-%").Scan(&archives)
	unindexed := []string{}
	rows, err := db.QueryContext(ctx, `SELECT session_id FROM archives WHERE account_id = ? AND session_id LIKE ? AND state NOT IN ('indexed', 'summarized')`, c.account, c.run+"-%")
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return err
		}
		unindexed = append(unindexed, s)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	printJSON(map[string]any{"sessions": len(sess), "committed": ok.Load(), "failed": failed.Load(), "memories_final_commit": memories.Load(), "archives": archives,
		"archives_not_indexed": len(unindexed), "failed_sessions": failedSessions, "unindexed_sessions": unindexed})
	if failed.Load() > 0 {
		return errors.New("some commits failed")
	}
	return nil
}

type memRow struct{ id, user, text string }

func activeMemories(ctx context.Context, db *sql.DB, c common, user string) ([]memRow, error) {
	q := `SELECT id, user_id, text FROM memories WHERE account_id = ? AND user_id LIKE ? AND scope = 'user'
		AND superseded_by IS NULL AND duplicate_of IS NULL AND valid_to_us IS NULL`
	arg := c.run + "-%"
	if user != "" {
		arg = user
	}
	rows, err := db.QueryContext(ctx, q, c.account, arg)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []memRow
	for rows.Next() {
		var m memRow
		if err := rows.Scan(&m.id, &m.user, &m.text); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// recallEach recalls each memory by its text; a hit is the memory's id among the answer's items.
func recallEach(ctx context.Context, nc *nats.Conn, names bus.Names, c common, mems []memRow, wantGone bool) (hits, degraded, errs int64) {
	var h, d, e atomic.Int64
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, m := range mems {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			var resp contract.RecallResponse
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if err := bus.Call(cctx, nc, names.RPC(c.account, "recall"), contract.RecallRequest{V: 1, UserID: m.user, Query: m.text, Scopes: []string{"user"}, Limit: 10}, &resp); err != nil {
				e.Add(1)
				return
			}
			if resp.Degraded {
				d.Add(1)
			}
			for _, it := range resp.Items {
				if it.ID == m.id || (wantGone && strings.Contains(it.Text, m.text)) {
					h.Add(1)
					return
				}
			}
		}()
	}
	wg.Wait()
	return h.Load(), d.Load(), e.Load()
}

func recall(args []string) error {
	var c common
	fs := c.flagSet("recall")
	label := fs.String("label", "", "the recall replica answering (for the report)")
	_ = fs.Parse(args)
	nc, _, names, err := connect(c)
	if err != nil {
		return err
	}
	defer nc.Close()
	db, err := openDB(c)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx := context.Background()
	mems, err := activeMemories(ctx, db, c, "")
	if err != nil {
		return err
	}
	start := time.Now()
	hits, degraded, errs := recallEach(ctx, nc, names, c, mems, false)
	printJSON(map[string]any{"replica": *label, "memories": len(mems), "hits": hits, "degraded": degraded, "errors": errs, "seconds": time.Since(start).Seconds()})
	return nil
}

// erase erases one user through the RPC, then checks SQL holds none of their rows and recall
// (whichever replica answers) returns none of their memories; with --check-only it only checks
// (run once per recall replica, or again after later faults and replays).
func erase(args []string) error {
	var c common
	fs := c.flagSet("erase")
	user := fs.String("user", "", "user to erase")
	memFile := fs.String("memories", "/out/erased-memories.json", "the erased user's memories and sessions, saved by the erase for the checks")
	checkOnly := fs.Bool("check-only", false, "only check that the erased user's memories are gone")
	label := fs.String("label", "", "the recall replica answering (for the report)")
	_ = fs.Parse(args)
	nc, _, names, err := connect(c)
	if err != nil {
		return err
	}
	defer nc.Close()
	db, err := openDB(c)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx := context.Background()
	type jm struct{ ID, User, Text string }
	var saved struct {
		Memories []jm
		Sessions []string
	}
	if !*checkOnly {
		mems, err := activeMemories(ctx, db, c, *user)
		if err != nil {
			return err
		}
		for _, m := range mems {
			saved.Memories = append(saved.Memories, jm{m.id, m.user, m.text})
		}
		sess, err := sessionsOf(ctx, db, c)
		if err != nil {
			return err
		}
		for _, su := range sess {
			if su[1] == *user {
				saved.Sessions = append(saved.Sessions, su[0])
			}
		}
		b, _ := json.Marshal(saved)
		if err := os.WriteFile(*memFile, b, 0o644); err != nil {
			return err
		}
		var res contract.EraseResult
		cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		if err := bus.Call(cctx, nc, names.RPC(c.account, "erase"), contract.EraseRequest{V: 1, UserID: *user}, &res); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "erased %s: %+v\n", *user, res)
	} else {
		b, err := os.ReadFile(*memFile)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &saved); err != nil {
			return err
		}
	}
	var mems []memRow
	for _, m := range saved.Memories {
		mems = append(mems, memRow{m.ID, m.User, m.Text})
	}
	// The session rows go with the erasure, so messages and archives are counted by the
	// sessions the user had before it.
	var sqlMsgs, sqlMems, sqlArchives, sessionAnswers int
	_ = db.QueryRowContext(ctx, `SELECT COUNT(*) FROM memories WHERE account_id = ? AND user_id = ?`, c.account, *user).Scan(&sqlMems)
	for _, sess := range saved.Sessions {
		var n, a int
		_ = db.QueryRowContext(ctx, `SELECT COUNT(*) FROM messages WHERE account_id = ? AND session_id = ?`, c.account, sess).Scan(&n)
		_ = db.QueryRowContext(ctx, `SELECT COUNT(*) FROM archives WHERE account_id = ? AND session_id = ?`, c.account, sess).Scan(&a)
		sqlMsgs += n
		sqlArchives += a
		// session.get must not find it (an erased session answers not_found).
		var meta contract.SessionMeta
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := bus.Call(cctx, nc, names.RPC(c.account, "session.get"), contract.SessionMetaRequest{V: 1, UserID: *user, SessionID: sess}, &meta)
		cancel()
		if err == nil && meta.MessageCount > 0 {
			sessionAnswers++
		}
	}
	hits, degraded, errs := recallEach(ctx, nc, names, c, mems, true)
	printJSON(map[string]any{"replica": *label, "user": *user, "erased_memories": len(mems), "erased_sessions": len(saved.Sessions),
		"sql_memories_left": sqlMems, "sql_messages_left": sqlMsgs, "sql_archives_left": sqlArchives, "session_answers": sessionAnswers,
		"recall_hits": hits, "degraded": degraded, "errors": errs})
	return nil
}

// drain measures ingest throughput: it publishes a backlog while ingest is stopped (the
// caller scales ingest to 0), then waits for the caller to start the replicas and times the
// drain from the first stored message to the last.
func drain(args []string) error {
	var c common
	fs := c.flagSet("drain")
	phase := fs.String("phase", "fill", "fill (publish the backlog) or measure (time the drain)")
	messages := fs.Int("messages", 20000, "messages of the backlog")
	sessions := fs.Int("sessions", 50, "sessions")
	_ = fs.Parse(args)
	nc, js, names, err := connect(c)
	if err != nil {
		return err
	}
	defer nc.Close()
	ctx := context.Background()
	if *phase == "fill" {
		r := rand.New(rand.NewPCG(7, 7))
		var futs []jetstream.PubAckFuture
		for i := range *messages / 2 {
			ev := turn(c, i%*sessions, i / *sessions, 10, 1000000, r)
			b, _ := json.Marshal(ev)
			f, err := js.PublishMsgAsync(&nats.Msg{Subject: names.Turns(c.account, ev.SessionID), Data: b, Header: nats.Header{"Nats-Msg-Id": []string{ev.EventID}}})
			if err != nil {
				return err
			}
			futs = append(futs, f)
			if len(futs) == 500 || i == *messages/2-1 { // at most 500 in flight
				for _, f := range futs {
					select {
					case <-f.Ok():
					case err := <-f.Err():
						return err
					}
				}
				futs = futs[:0]
			}
		}
		printJSON(map[string]any{"backlog": *messages})
		return nil
	}
	db, err := openDB(c)
	if err != nil {
		return err
	}
	defer db.Close()
	count := func() int {
		var n int
		_ = db.QueryRowContext(ctx, `SELECT COUNT(*) FROM messages WHERE account_id = ? AND message_id LIKE ?`, c.account, c.run+"-%").Scan(&n)
		return n
	}
	// The drain starts when the backlog first shrinks and ends when nothing is pending (the
	// consumer's counters are cheap to poll; SQL is counted once, at the end).
	var first time.Time
	var initial uint64
	deadline := time.Now().Add(10 * time.Minute)
	for {
		p, err := pendingTurns(ctx, js, names)
		if err == nil {
			if initial == 0 {
				initial = p
			}
			if first.IsZero() && p < initial {
				first = time.Now()
			}
			if p == 0 && !first.IsZero() {
				break
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("drain not done: %d of %d events pending", p, initial)
		}
		time.Sleep(50 * time.Millisecond)
	}
	el := time.Since(first).Seconds()
	printJSON(map[string]any{"stored": count(), "seconds": el, "msg_per_s": float64(*messages) / el})
	return nil
}

// leader prints the server name of the turns stream's cluster leader ("" unclustered).
func leader(args []string) error {
	var c common
	fs := c.flagSet("leader")
	_ = fs.Parse(args)
	nc, js, names, err := connect(c)
	if err != nil {
		return err
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, names.Stream(bus.StreamTurns))
	if err != nil {
		return err
	}
	if cl := s.CachedInfo().Cluster; cl != nil {
		fmt.Println(cl.Leader)
	}
	return nil
}
