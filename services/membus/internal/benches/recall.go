package benches

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/membus/membus/pkg/bench"
	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/config"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/embed"
	"github.com/membus/membus/pkg/embed/onnx"
	"github.com/membus/membus/pkg/memory"
	"github.com/membus/membus/pkg/metrics"
	"github.com/membus/membus/pkg/projection"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/vector"
	"github.com/membus/membus/services/membus/internal/app"
	"github.com/membus/membus/services/membus/internal/cli"
	"github.com/membus/membus/services/membus/internal/harness"
)

// recallParams are the knobs of one `membus bench recall` run.
type recallParams struct {
	backend   harness.Backend // zero: embedded (SQLite); real: MariaDB + Redis (the vector index stays local)
	sizes     []int           // memories per user, one measured configuration each
	count     int             // measured recalls per size
	warmup    int
	restart   bool   // embedded: also measure a membus up restarted on the seeded data
	archive   bool   // also write and index the messages the memories came from
	twoPeople bool   // with archive: two named people say the messages, and every question names both
	persons   bool   // recall_person_queries (opt-in)
	embedder  string // hash or onnx (MEMBUS_MODEL_DIR, else ./data/models)
	// candidates: recall_candidates, each side of each scope (0 = the default, 24)
	candidates int
	progress   io.Writer
	notes      io.Writer
}

func benchRecallCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "recall", Short: "recall latency by memories per user against a brute-force floor", Args: cli.NoArgs}
	fs := cmd.Flags()
	sizes := fs.String("sizes", "1000,10000", "memories per user, comma-separated (the issue's full table: 1000,10000,100000)")
	count := fs.Int("count", 300, "measured recalls per size")
	warmup := fs.Int("warmup", 30, "recalls before measuring, per size")
	asJSON := fs.Bool("json", false, "print docs/design.md §10 JSON Lines on stdout")
	progress := fs.Bool("progress", false, "draw a progress bar on stderr even when it is not a terminal")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	backend := fs.String("backend", "embedded", "embedded (SQLite) or real (MEMBUS_MYSQL_DSN, MEMBUS_REDIS_URL; the vector index stays local)")
	restart := fs.Bool("restart", true, "embedded: also start membus up (this executable) on each size's seeded data, send it the same recalls over HTTP and print its RSS")
	embedder := fs.String("embedder", "hash", "hash, or onnx: the local model in MEMBUS_MODEL_DIR (else ./data/models; `make model`), which also embeds the seeded memories")
	archive := fs.Bool("archive", false, "also write each memory's source message (the user and the assistant in turn) and index the archives: their messages and session contexts, as for a user whose memories came from conversations")
	twoPeople := fs.Bool("two-people", false, "with --archive: the source messages are said by "+benchPeople[0]+" and "+benchPeople[1]+" in turn and every question names both, so that with --person-queries each recall also runs its per-person queries (services/recall/persons.go)")
	persons := fs.Bool("person-queries", false, "switch on recall's opt-in per-person queries (MEMBUS_RECALL_PERSON_QUERIES), to measure them (with --archive --two-people: without two people named, none runs)")
	candidates := fs.Int("recall-candidates", 0, fmt.Sprintf("candidates recall takes from each side of each scope (MEMBUS_RECALL_CANDIDATES, 1-%d; 0: the default, %d)", contract.MaxRecallCandidates, contract.DefaultRecallCandidates))
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
		return cli.Exit(func() int {
			stopProfile, err := harness.CPUProfile(*cpuProfile)
			if err != nil {
				fmt.Fprintf(stderr, "membus bench recall: %v\n", err)
				return 1
			}
			defer stopProfile()
			p := recallParams{count: *count, warmup: *warmup, restart: *restart, archive: *archive, twoPeople: *twoPeople, persons: *persons, embedder: *embedder, candidates: *candidates, notes: stderr}
			if p.candidates != 0 {
				if err := contract.CheckRecallCandidates(p.candidates); err != nil {
					fmt.Fprintf(stderr, "membus bench recall: --recall-candidates %v (0: the default)\n", err)
					return 2
				}
			}
			if p.twoPeople && !p.archive {
				fmt.Fprintln(stderr, "membus bench recall: --two-people needs --archive (the two people are the speakers of the archived messages)")
				return 2
			}
			if p.embedder != "hash" && p.embedder != "onnx" {
				fmt.Fprintf(stderr, "membus bench recall: --embedder must be hash or onnx, got %q\n", p.embedder)
				return 2
			}
			if p.embedder == "onnx" {
				fmt.Fprintf(stderr, "membus bench recall: the model runs on %s\n", onnx.CPU())
			}
			rb, err := harness.BackendFlag(*backend)
			if err != nil {
				fmt.Fprintf(stderr, "membus bench recall: %v\n", err)
				return 2
			}
			p.backend = rb
			for _, s := range strings.Split(*sizes, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(s))
				if err != nil || n <= 0 {
					fmt.Fprintf(stderr, "membus bench recall: --sizes must be positive integers, got %q\n", *sizes)
					return 2
				}
				p.sizes = append(p.sizes, n)
			}
			if p.count <= 0 || p.warmup < 0 {
				fmt.Fprintln(stderr, "membus bench recall: --count must be positive and --warmup not negative")
				return 2
			}
			p.progress = harness.Progress(*progress, stderr)
			ctx, stop := app.SignalContext()
			defer stop()
			results, err := benchRecall(ctx, p)
			if err != nil {
				fmt.Fprintf(stderr, "membus bench recall: %v\n", err)
				return 1
			}
			return writeResults(stdout, stderr, "recall", *asJSON, results)
		}())
	}
	return cmd
}

// recallWords is the vocabulary of the generated memories and queries.
// benchPeople say the seeded messages with --two-people.
var benchPeople = [2]string{"Alice", "Bob"}

var recallWords = strings.Fields(`alice bob carol dave erin frank grace heidi ivan judy
	likes loves visited moved works studies plays cooks reads bought painted adopted
	coffee tea cello guitar denver boston paris tokyo berlin lisbon garden kitchen bicycle kayak
	python golang rust compiler database cluster kafka postgres redis nats
	monday tuesday weekend summer winter morning evening birthday wedding concert
	dog cat parrot horse novel poem marathon hiking climbing sailing pottery chess
	sister brother mother father friend colleague neighbour manager teacher doctor`)

func recallSentence(r *rand.Rand, n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = recallWords[r.IntN(len(recallWords))]
	}
	return strings.Join(ws, " ")
}

// benchRecall measures, per size, recall over NATS (the recall RPC with its defaults, a fresh
// embedded membus: SQLite, local vector store, the hash or onnx embedder) for one user holding that many
// memories, written straight into SQL and the vector store. The floor, in the same run, is
// the brute-force search recall cannot beat: embed the query, then score every memory of
// the user exactly (cosine) in a plain loop and keep the top 24.
func benchRecall(ctx context.Context, p recallParams) ([]bench.Result, error) {
	var results []bench.Result
	for _, size := range p.sizes {
		r, err := benchRecallSize(ctx, size, p)
		if err != nil {
			return results, fmt.Errorf("size %d: %w", size, err)
		}
		results = append(results, r)
	}
	return results, nil
}

func benchRecallSize(ctx context.Context, size int, p recallParams) (bench.Result, error) {
	rb := p.backend
	if rb.DSN != "" {
		rb.RunID = harness.RandomHex(4) // each size gets its own accounts in the shared servers
	}
	// Embedded, the data dir outlives the run's services: a restarted membus up is measured on it.
	dir := ""
	if rb.DSN == "" && p.restart {
		d, err := os.MkdirTemp("", "membus-bench-recall-")
		if err != nil {
			return bench.Result{}, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	env, closeEnv, err := harness.OpenIn(ctx, dir, "interval", p.embedder, rb, slog.New(slog.NewTextHandler(io.Discard, nil)), func(c *config.Config) {
		if p.candidates > 0 {
			c.RecallCandidates = p.candidates
		}
		c.RecallPersonQueries = p.persons
	})
	if err != nil {
		return bench.Result{}, err
	}
	var closeOnce sync.Once
	defer closeOnce.Do(closeEnv)
	account, user, agent := "bench-recall", "u-bench", "main"
	if rb.RunID != "" {
		account += "-" + rb.RunID
	}
	start := time.Now()
	var speakers []string
	if p.twoPeople {
		speakers = benchPeople[:]
	}
	texts, err := seedRecallMemories(ctx, env, account, user, agent, size, p.archive, speakers)
	if err != nil {
		return bench.Result{}, fmt.Errorf("seed: %w", err)
	}
	what := "memories"
	if p.archive {
		what = "memories, their source messages and the archives' session contexts"
	}
	if p.twoPeople {
		what += " (the messages said by " + benchPeople[0] + " and " + benchPeople[1] + ")"
	}
	fmt.Fprintf(p.notes, "membus bench recall: %d %s written to SQL and the local index in %s\n", size, what, time.Since(start).Round(time.Millisecond))

	queries := rand.New(rand.NewPCG(uint64(size), 2))
	qs := make([]string, p.warmup+p.count)
	for i := range qs {
		// Every query names someone, as the seeded memories do: recall then moves the query's
		// vector away from the name's (services/recall/query.go), the path a real question takes;
		// each of the ten names is embedded once, then cached. Every other one asks "which …",
		// a list question, whose candidates recall also scans for the names they hold
		// (services/recall/specifics.go).
		name := strings.Title(recallWords[queries.IntN(10)]) //nolint:staticcheck // ASCII words
		qs[i] = "what does " + name + " " + recallSentence(queries, 3)
		if i%2 == 1 {
			qs[i] = "which " + recallSentence(queries, 1) + " has " + name + " " + recallSentence(queries, 2)
		}
		if p.twoPeople {
			// Both speakers named: recall embeds the question once more per person.
			both := benchPeople[0] + " and " + benchPeople[1]
			qs[i] = "what do " + both + " both " + recallSentence(queries, 3)
			if i%2 == 1 {
				qs[i] = "which " + recallSentence(queries, 1) + " have " + both + " both " + recallSentence(queries, 2)
			}
		}
	}
	subject := env.Names.RPC(account, "recall")
	op := func(ctx context.Context, i int) (int, error) {
		var resp contract.RecallResponse
		if err := bus.Call(ctx, env.NC, subject, contract.RecallRequest{V: contract.Version, UserID: user, AgentID: agent, Query: qs[i%len(qs)]}, &resp); err != nil {
			return 0, err
		}
		if resp.Degraded {
			return 0, fmt.Errorf("recall answered degraded")
		}
		return 0, nil
	}
	opt := bench.Options{WarmupCount: p.warmup, Count: p.count, Concurrency: 1, Progress: p.progress}
	res, err := bench.Run(ctx, "recall", opt, op)
	if err != nil {
		return res, err
	}
	if p.twoPeople {
		if err := notePersonQueries(env, p, len(qs)); err != nil {
			return res, err
		}
	}
	// RSS is membus's: read before the floor's own copy of every vector exists.
	res.RSSMB = bench.RSSMB()
	vecs := make([][]float32, 0, len(texts))
	for b := 0; b < len(texts); b += 1000 {
		vs, err := env.Embedder.Embed(ctx, texts[b:min(b+1000, len(texts))])
		if err != nil {
			return res, fmt.Errorf("floor: %w", err)
		}
		vecs = append(vecs, vs...)
	}
	floor, err := bench.Run(ctx, "recall-floor", opt, bruteForceOp(env.Embedder, vecs, qs, 24))
	if err != nil {
		return res, fmt.Errorf("floor: %w", err)
	}
	res.Backend, res.Embedder, res.Size = "embedded", env.Embedder.Model(), size
	if rb.DSN != "" {
		res.Backend = "real"
	}
	res.Floor = &floor
	if dir != "" {
		modelDir, err := filepath.Abs(env.Config.ModelPath())
		if err != nil {
			return res, err
		}
		closeOnce.Do(closeEnv)
		rss, err := restartedRSS(ctx, dir, modelDir, p, account, user, agent, qs)
		if err != nil {
			return res, fmt.Errorf("restarted membus up: %w", err)
		}
		fmt.Fprintf(p.notes, "membus bench recall: %d memories: a membus up restarted on them: RSS %.1f MB after %d recalls over HTTP "+
			"(the table's RSS is this process's, which also seeded them and ran the floor)\n", size, rss, len(qs))
	}
	return res, nil
}

// restartedRSS starts `membus up` (this executable, the run's embedder) on the data dir the run
// seeded, as a user restarting it would, sends it the run's recalls over HTTP (insecure mode,
// loopback), and returns its resident set size: what membus holding those memories occupies,
// without the seeding's garbage or the floor's copy of the vectors.
func restartedRSS(ctx context.Context, dir, modelDir string, p recallParams, account, user, agent string, qs []string) (float64, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	var addrs [2]string
	for i := range addrs {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		addrs[i] = ln.Addr().String()
		if err := ln.Close(); err != nil {
			return 0, err
		}
	}
	cmd := exec.CommandContext(ctx, exe, "up")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MEMBUS_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "MEMBUS_DATA_DIR="+dir, "MEMBUS_EMBEDDER="+p.embedder, "MEMBUS_MODEL_DIR="+modelDir, "MEMBUS_NATS_SYNC=interval", "MEMBUS_NATS_LISTEN="+addrs[0],
		"MEMBUS_HTTP_ADDR="+addrs[1], "MEMBUS_INSECURE_NO_AUTH=true", "MEMBUS_LOG_LEVEL=error", "MEMBUS_RATE_LIMIT=1000000", "MEMBUS_RATE_BURST=1000000")
	if p.candidates > 0 {
		cmd.Env = append(cmd.Env, fmt.Sprintf("MEMBUS_RECALL_CANDIDATES=%d", p.candidates))
	}
	if p.persons {
		cmd.Env = append(cmd.Env, "MEMBUS_RECALL_PERSON_QUERIES=true")
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}()
	client := &http.Client{Timeout: 10 * time.Second}
	base := "http://" + addrs[1]
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if r, err := client.Get(base + "/readyz"); err == nil {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return 0, fmt.Errorf("not ready within 2 minutes: %s", stderr.String())
		}
	}
	for _, q := range qs {
		body, _ := json.Marshal(contract.RecallRequest{Query: q, AgentID: agent})
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/recall", bytes.NewReader(body))
		if err != nil {
			return 0, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Membus-Account", account)
		req.Header.Set("X-Membus-User", user)
		r, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		var resp contract.RecallResponse
		err = json.NewDecoder(r.Body).Decode(&resp)
		r.Body.Close()
		switch {
		case err != nil:
			return 0, fmt.Errorf("recall: %s: %w", r.Status, err)
		case r.StatusCode != http.StatusOK || resp.Degraded || len(resp.Items) == 0:
			return 0, fmt.Errorf("recall: %s, degraded %v, %d items", r.Status, resp.Degraded, len(resp.Items))
		}
	}
	rss, ok := bench.ProcessRSSMB(strconv.Itoa(cmd.Process.Pid))
	if !ok {
		return 0, fmt.Errorf("no /proc/%d/status", cmd.Process.Pid)
	}
	return rss, nil
}

// bruteForceOp is the floor: the query embedded, every vector scored exactly, the top k kept.
func bruteForceOp(emb embed.Embedder, vecs [][]float32, qs []string, k int) bench.Op {
	return func(ctx context.Context, i int) (int, error) {
		q, err := embed.EmbedQuery(ctx, emb, []string{qs[i%len(qs)]})
		if err != nil {
			return 0, err
		}
		top := make([]float64, 0, k+1)
		for _, v := range vecs {
			var dot float64
			for j, x := range v {
				dot += float64(x) * float64(q[0][j])
			}
			if len(top) < k || dot > top[len(top)-1] {
				top = append(top, dot)
				sort.Sort(sort.Reverse(sort.Float64Slice(top)))
				if len(top) > k {
					top = top[:k]
				}
			}
		}
		if len(top) == 0 || math.IsNaN(top[0]) {
			return 0, fmt.Errorf("floor scored nothing")
		}
		return 0, nil
	}
}

// notePersonQueries says how many of the n recalls ran recall's per-person queries
// (membus_recall_person_queries_total), and fails when they are on and a learned model's ran
// none: the run would not measure what --person-queries asks for. The hash embedder runs none
// (it cannot mask).
func notePersonQueries(env *app.Env, p recallParams, n int) error {
	reg := env.Registry("recall")
	if reg == nil {
		return errors.New("--two-people: no recall service in this process to count its per-person queries")
	}
	fams, err := reg.Families()
	if err != nil {
		return err
	}
	ran, _ := metrics.Value(fams, "membus_recall_person_queries_total", nil)
	fmt.Fprintf(p.notes, "membus bench recall: %.0f of %d recalls ran the per-person queries\n", ran, n)
	if ran == 0 && p.persons && p.embedder != "hash" {
		return errors.New("--person-queries: no recall ran the per-person queries (see services/recall/persons.go)")
	}
	return nil
}

// seedRecallMemories writes n user-scope memories (with a few agent-scope ones) of one user
// into SQL, through the store's own writes (one archive per batch), and into the vector store,
// and returns their texts (the floor embeds them again once RSS is read). With archive, each
// memory's source message is written too, said by the user and the assistant in turn, and each
// archive is indexed as the projection indexes a committed one (projection.IndexArchive): its
// memories, one point per archived message and a session context per speaker, so recall's
// archive scope, neighbouring-turn lift and session contexts have what a real user's have.
// speakers, when set, name the two who say the messages in turn (else they are the roles').
func seedRecallMemories(ctx context.Context, env *app.Env, account, user, agent string, n int, archive bool, speakers []string) ([]string, error) {
	const session, batch = "bench-recall-seed", 1000
	turn := store.Turn{AccountID: account, UserID: user, AgentID: agent, SessionID: session, EventID: "bench-recall-seed",
		Messages: []store.Message{{MessageID: "seed", Role: contract.RoleUser, Content: "seed", Parts: json.RawMessage(`[]`), Tokens: 1, CreatedAt: time.Now()}}}
	if _, err := env.Store.ApplyTurns(ctx, nil, []store.Turn{turn}); err != nil {
		return nil, err
	}
	epoch, err := env.Store.AcquireEpoch(ctx, account, session)
	if err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(uint64(n), 1))
	all := make([]string, 0, n)
	for b := 0; b < n; b += batch {
		m := min(batch, n-b)
		texts := make([]string, m)
		for i := range texts {
			texts[i] = fmt.Sprintf("%s %s (note %d)", strings.Title(recallWords[r.IntN(10)]), recallSentence(r, 6+r.IntN(8)), b+i) //nolint:staticcheck // ASCII words
		}
		vecs, err := env.Embedder.Embed(ctx, texts)
		if err != nil {
			return nil, err
		}
		if archive {
			if err := seedSourceMessages(ctx, env, turn, b, texts, speakers); err != nil {
				return nil, err
			}
		}
		a := store.Archive{ID: memory.ArchiveID(account, session, int64(2+b), int64(1+b+m)), AccountID: account, SessionID: session, UserID: user,
			AgentID: agent, FromSeq: int64(2 + b), ToSeq: int64(1 + b + m), Kind: contract.CommitSync, State: store.StateArchived, RequestID: fmt.Sprintf("seed-%d", b)}
		if err := env.Store.CreateArchive(ctx, epoch, a, nil); err != nil {
			return nil, err
		}
		mems := make([]store.Memory, m)
		pts := make([]vector.Point, m)
		now := time.Now().UTC()
		for i, text := range texts {
			scope, cat := contract.ScopeUser, memory.Categories[i%7]
			if i%20 == 0 {
				scope, cat = contract.ScopeAgent, memory.Decision
			}
			c := memory.Candidate{Scope: scope, Category: cat, Subject: user, Value: text, Text: text, Polarity: 1}
			mems[i] = store.Memory{ID: memory.ID(account, user, agent, c), AccountID: account, UserID: user, AgentID: agent, Scope: scope,
				Category: cat, Subject: user, Value: text, Text: text, Abstract: memory.Abstract(text), Polarity: 1, Importance: 0.5,
				Sources: []store.Source{{SessionID: session, MessageID: fmt.Sprintf("m-%d", b+i)}}, ValidFrom: now,
				ContentHash: memory.ContentHash(text), Embedding: vecs[i], EmbedModel: env.Embedder.Model()}
			pts[i] = projection.MemoryPoint(mems[i])
		}
		if err := env.Store.SaveMemories(ctx, epoch, a, mems, nil, nil); err != nil {
			return nil, err
		}
		if archive {
			if err := projection.IndexArchive(ctx, projection.Deps{Store: env.Store, Embedder: env.Embedder, Vectors: env.Vectors}, a); err != nil {
				return nil, err
			}
		} else if err := env.Vectors.Upsert(ctx, env.Embedder.Model(), pts); err != nil {
			return nil, err
		}
		all = append(all, texts...)
	}
	return all, nil
}

// seedSourceMessages writes the source messages of one batch of memories (m-<b+i>, the
// memory's own text), the user and the assistant in turn, after the session's seq 1+b; with
// speakers, each message carries its speaker's name (a session context per name).
func seedSourceMessages(ctx context.Context, env *app.Env, seed store.Turn, b int, texts []string, speakers []string) error {
	turn := seed
	turn.EventID = fmt.Sprintf("bench-recall-seed-%d", b)
	turn.Messages = make([]store.Message, len(texts))
	at := time.Now().UTC()
	for i, text := range texts {
		role := contract.RoleUser
		if i%2 == 1 {
			role = contract.RoleAssistant
		}
		turn.Messages[i] = store.Message{MessageID: fmt.Sprintf("m-%d", b+i), Position: i, Role: role, Content: text,
			Parts: json.RawMessage(`[]`), Tokens: len(text) / 4, CreatedAt: at}
		if len(speakers) > 0 {
			turn.Messages[i].Name = speakers[i%len(speakers)]
		}
	}
	_, err := env.Store.ApplyTurns(ctx, nil, []store.Turn{turn})
	return err
}
