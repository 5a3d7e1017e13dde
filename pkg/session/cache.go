package session

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/metrics"
	"github.com/membus/membus/pkg/stages"
	"github.com/membus/membus/pkg/store"
)

const (
	// CacheTTL is how long a session's cache and dedup keys live; writes refresh it.
	CacheTTL = 7 * 24 * time.Hour
	// cacheTimeout bounds every Redis call of the cache; the SQL answer is the fallback.
	cacheTimeout = 500 * time.Millisecond
	// applyAttempts is how often a write retries a cache update that raced another writer
	// before it drops the session's cache instead.
	applyAttempts = 3
)

// NewCached returns the session store with the Redis hot cache in front of SQL. Keys start
// with prefix and carry the account: <prefix>cache:{<account>:<session token>}:z|h|m|g and
// <prefix>dedup:<account>:<md5>. m counts cache failures (session_cache_failures_total{op});
// it and log may be nil.
//
// A hit is served only after one primary-key read of the session row agrees with the cached seq
// range, so a write that never reached this cache (another replica whose cache update and drop
// both failed) can never be served stale; the messages themselves still come from Redis.
func NewCached(st *store.Store, rdb redis.UniversalClient, prefix string, m *metrics.Metrics, log *slog.Logger) Store {
	if log == nil {
		log = slog.Default()
	}
	c := &cachedStore{sql: sqlStore{st: st}, rdb: rdb, prefix: prefix, log: log, dirty: map[string]cacheKeys{}, failed: func(string) {}}
	if m != nil {
		v := m.CounterVec("session_cache_failures_total", "Session cache operations that failed (the SQL answer or write stood; the cache was dropped).", "op")
		c.failed = func(op string) { v.WithLabelValues(op).Inc() }
	}
	return c
}

// cachedStore keeps, per session, the newest HotMessages active messages and the session
// row in Redis:
//
//	z  sorted set, member and score = seq
//	h  hash seq → message (JSON)
//	m  the session row (JSON); present ⇔ the session is cached
//	g  the generation: bumped (INCR) after every SQL write of the session and by every
//	   invalidation, never deleted (it outlives the entry by its TTL)
//
// The cached messages are always exactly the active seqs max(archived_upto+1,
// next_seq−HotMessages) … next_seq−1 of the cached row, so the row says what the entry holds.
//
// No stale hit: a write commits in SQL, then bumps g and reads SQL, then applies what it read
// only if g is still its own bump (else it retries, then drops the entry). A read miss takes
// g before reading SQL and backfills only if g has not moved and the entry is still absent —
// so any write or archive that committed after that SQL read aborts the backfill (its bump
// comes after its commit). When Redis cannot be reached after a write or an archive, the
// entry is dropped; when even that fails the session is marked dirty in this process, which
// then serves it from SQL and retries the drop before it uses the cache for it again.
type cachedStore struct {
	sql    sqlStore
	rdb    redis.UniversalClient
	prefix string
	log    *slog.Logger
	failed func(op string)

	mu    sync.Mutex
	dirty map[string]cacheKeys // sessions whose entry may be stale and could not be dropped
}

type cacheKeys struct {
	account, session string
	z, h, m, g       string
}

func (c *cachedStore) keys(account, session string) cacheKeys {
	base := c.prefix + "cache:{" + account + ":" + bus.SessionToken(session) + "}:"
	return cacheKeys{account: account, session: session, z: base + "z", h: base + "h", m: base + "m", g: base + "g"}
}

func (k cacheKeys) all() []string { return []string{k.z, k.h, k.m, k.g} }

func ttlMS() int64 { return CacheTTL.Milliseconds() }

// cacheCtx detaches the cache work from the caller's cancellation (the SQL write stands and
// the cache must follow it) and bounds it.
func cacheCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cacheTimeout)
}

// cachedMessage is a message as the cache stores it (account and session are in the key).
type cachedMessage struct {
	Seq       int64  `json:"q"`
	MessageID string `json:"i"`
	EventID   string `json:"e"`
	Position  int    `json:"p"`
	Role      string `json:"r"`
	Name      string `json:"n,omitempty"`
	Content   string `json:"c"`
	Parts     string `json:"x"`
	Tokens    int    `json:"t"`
	CreatedUS int64  `json:"at"`
}

func encodeMessage(m store.Message) (string, error) {
	b, err := json.Marshal(cachedMessage{Seq: m.Seq, MessageID: m.MessageID, EventID: m.EventID, Position: m.Position, Role: m.Role,
		Name: m.Name, Content: m.Content, Parts: string(m.Parts), Tokens: m.Tokens, CreatedUS: m.CreatedAt.UnixMicro()})
	return string(b), err
}

func decodeMessage(k cacheKeys, s string) (store.Message, error) {
	var x cachedMessage
	if err := json.Unmarshal([]byte(s), &x); err != nil {
		return store.Message{}, err
	}
	return store.Message{AccountID: k.account, SessionID: k.session, Seq: x.Seq, MessageID: x.MessageID, EventID: x.EventID,
		Position: x.Position, Role: x.Role, Name: x.Name, Content: x.Content, Parts: json.RawMessage(x.Parts), Tokens: x.Tokens,
		CreatedAt: time.UnixMicro(x.CreatedUS).UTC()}, nil
}

// hotRange is the seq range a cache entry of sess holds.
func hotRange(sess *store.Session) (low, high int64) {
	high = sess.NextSeq - 1
	return max(sess.ArchivedUpto+1, high-HotMessages+1), high
}

// complete reports whether the entry of sess holds every active message.
func complete(sess *store.Session) bool { return sess.NextSeq-1-sess.ArchivedUpto <= HotMessages }

// entryArgs are the meta and seq/body pairs of an entry, as script arguments.
func entryArgs(sess *store.Session, msgs []store.Message) ([]any, error) {
	meta, err := json.Marshal(sess)
	if err != nil {
		return nil, err
	}
	args := []any{string(meta)}
	for _, m := range msgs {
		body, err := encodeMessage(m)
		if err != nil {
			return nil, err
		}
		args = append(args, m.Seq, body)
	}
	return args, nil
}

// readScript returns {"miss", gen} or {"hit", meta, bodies…} (ARGV[1] bodies, newest seq
// first; 0 all, -1 none). An entry whose bodies disagree with its index is dropped.
var readScript = `
local meta = redis.call('GET', KEYS[3])
if not meta then
  return {'miss', redis.call('GET', KEYS[4]) or '0'}
end
local n = tonumber(ARGV[1])
local out = {'hit', meta}
if n < 0 then return out end
local seqs
if n > 0 then seqs = redis.call('ZREVRANGE', KEYS[1], 0, n - 1) else seqs = redis.call('ZREVRANGE', KEYS[1], 0, -1) end
if #seqs == 0 then return out end
local bodies = redis.call('HMGET', KEYS[2], unpack(seqs))
for i = 1, #bodies do
  if not bodies[i] then
    redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
    return {'miss', tostring(redis.call('INCR', KEYS[4]))}
  end
  out[#out + 1] = bodies[i]
end
return out
`

// backfillScript writes an entry read from SQL under generation ARGV[1], only if the
// generation has not moved and no entry appeared meanwhile.
var backfillScript = `
if (redis.call('GET', KEYS[4]) or '0') ~= ARGV[1] then return 0 end
if redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
redis.call('DEL', KEYS[1], KEYS[2])
for i = 4, #ARGV, 2 do
  redis.call('ZADD', KEYS[1], ARGV[i], ARGV[i])
  redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1])
end
redis.call('SET', KEYS[3], ARGV[3], 'PX', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return 1
`

// bumpScript bumps the generation after a write and returns it with the cached meta (” when
// the session is not cached).
var bumpScript = `
local g = redis.call('INCR', KEYS[4])
redis.call('PEXPIRE', KEYS[4], ARGV[1])
return {g, redis.call('GET', KEYS[3]) or ''}
`

// applyScript adds a write's messages to an entry, drops seqs below ARGV[4] and refreshes
// the TTL — only if the generation is still the writer's bump ARGV[1] and the entry exists.
var applyScript = `
if redis.call('GET', KEYS[4]) ~= ARGV[1] then return 0 end
if redis.call('EXISTS', KEYS[3]) == 0 then return 0 end
for i = 5, #ARGV, 2 do
  redis.call('ZADD', KEYS[1], ARGV[i], ARGV[i])
  redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1])
end
local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[4])
if #old > 0 then
  redis.call('ZREM', KEYS[1], unpack(old))
  redis.call('HDEL', KEYS[2], unpack(old))
end
redis.call('SET', KEYS[3], ARGV[3], 'PX', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
redis.call('PEXPIRE', KEYS[4], ARGV[2])
return 1
`

// invalidateScript drops an entry and bumps the generation (aborting backfills in flight).
var invalidateScript = `
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
redis.call('INCR', KEYS[4])
redis.call('PEXPIRE', KEYS[4], ARGV[1])
return 1
`

// Stages of the cached ApplyTurns after its SQL transaction (store.StageSQLBegin …), timed
// into the stages.Timer its context carries (if any).
const (
	// StageRedisCache brings the hot cache of each session the batch touched up to SQL: the
	// generation bumps, the reads of the new tail from SQL and the apply scripts.
	StageRedisCache = "redis_cache"
	// StageRedisDedup sets the dedup key of every message of the batch (one pipeline).
	StageRedisDedup = "redis_dedup"
)

// ApplyTurns writes SQL first, then the cache, then the dedup keys.
func (c *cachedStore) ApplyTurns(ctx context.Context, trigger store.Trigger, turns []store.Turn) ([]store.ApplyResult, error) {
	res, err := c.sql.ApplyTurns(ctx, trigger, turns)
	if err != nil {
		return nil, err
	}
	tm := stages.FromContext(ctx)
	start := time.Now()
	cctx, cancel := cacheCtx(ctx)
	defer cancel()
	seen := map[string]bool{}
	var touched []cacheKeys
	for i, t := range turns {
		k := c.keys(t.AccountID, t.SessionID)
		if res[i].Tombstoned || res[i].Foreign || seen[k.m] {
			continue
		}
		seen[k.m] = true
		touched = append(touched, k)
	}
	c.syncAfterWrite(cctx, touched)
	start = tm.Since(StageRedisCache, start)
	c.setDedup(cctx, turns, res)
	tm.Since(StageRedisDedup, start)
	return res, nil
}

// syncAfterWrite brings the cached sessions among ks up to their SQL state: bump, read SQL,
// apply if nobody moved the generation meanwhile.
func (c *cachedStore) syncAfterWrite(ctx context.Context, ks []cacheKeys) {
	c.drainDirty(ctx)
	var live []cacheKeys
	for _, k := range ks {
		if c.isDirty(k) {
			continue // stays served from SQL until its drop succeeds
		}
		live = append(live, k)
	}
	for attempt := 1; len(live) > 0; attempt++ {
		pipe := c.rdb.Pipeline()
		bumps := make([]*redis.Cmd, len(live))
		for i, k := range live {
			bumps[i] = pipe.Eval(ctx, bumpScript, k.all(), ttlMS())
		}
		_, _ = pipe.Exec(ctx)
		type pending struct {
			k    cacheKeys
			gen  int64
			args []any
		}
		var applies []pending
		for i, k := range live {
			gen, meta, err := bumpResult(bumps[i])
			if err != nil {
				c.writeFailed(ctx, k, err)
				continue
			}
			if meta == "" {
				continue // not cached: the bump alone aborts backfills that read SQL before this write
			}
			args, err := c.readTail(ctx, k, meta)
			if err != nil {
				c.writeFailed(ctx, k, err)
				continue
			}
			applies = append(applies, pending{k: k, gen: gen, args: args})
		}
		if len(applies) == 0 {
			return
		}
		pipe = c.rdb.Pipeline()
		cmds := make([]*redis.Cmd, len(applies))
		for i, p := range applies {
			cmds[i] = pipe.Eval(ctx, applyScript, p.k.all(), append([]any{p.gen, ttlMS()}, p.args...)...)
		}
		_, _ = pipe.Exec(ctx)
		live = live[:0]
		for i, p := range applies {
			n, err := cmds[i].Int()
			switch {
			case err != nil:
				c.writeFailed(ctx, p.k, err)
			case n == 0 && attempt < applyAttempts:
				live = append(live, p.k) // another writer or an archive moved the generation: again
			case n == 0:
				c.drop(ctx, p.k, "write", errors.New("cache update kept racing other writers"))
			}
		}
	}
}

func bumpResult(cmd *redis.Cmd) (int64, string, error) {
	vals, err := cmd.Slice()
	if err != nil {
		return 0, "", err
	}
	if len(vals) != 2 {
		return 0, "", fmt.Errorf("bump: unexpected reply %v", vals)
	}
	gen, _ := vals[0].(int64)
	meta, _ := vals[1].(string)
	return gen, meta, nil
}

// readTail reads from SQL what an entry whose cached row is meta lacks: the current row,
// the low end of its range, and the active messages above the cached ones.
func (c *cachedStore) readTail(ctx context.Context, k cacheKeys, meta string) ([]any, error) {
	var cached store.Session
	if err := json.Unmarshal([]byte(meta), &cached); err != nil {
		return nil, fmt.Errorf("decode cached session: %w", err)
	}
	sess, err := c.sql.st.GetSession(ctx, k.account, k.session)
	if err != nil {
		return nil, err
	}
	low, high := hotRange(sess)
	from := max(low, cached.NextSeq)
	var msgs []store.Message
	if from <= high {
		if msgs, err = c.sql.st.MessagesBySeq(ctx, k.account, k.session, from, high); err != nil {
			return nil, err
		}
		msgs = activeOnly(msgs)
	}
	args, err := entryArgs(sess, msgs)
	if err != nil {
		return nil, err
	}
	return append([]any{args[0], low}, args[1:]...), nil
}

// writeFailed handles a cache update that failed after the SQL write: drop the entry.
func (c *cachedStore) writeFailed(ctx context.Context, k cacheKeys, err error) {
	c.drop(ctx, k, "write", err)
}

// drop deletes the session's entry (a miss, never a stale hit); when Redis cannot be
// reached the session is marked dirty. The failure is logged and counted.
func (c *cachedStore) drop(ctx context.Context, k cacheKeys, op string, cause error) {
	c.failed(op)
	err := c.rdb.Eval(ctx, invalidateScript, k.all(), ttlMS()).Err()
	if err != nil {
		c.markDirty(k)
	}
	c.log.Warn("session cache update failed; dropped the session's cache entry", "op", op,
		"account", k.account, "session", k.session, "err", cause, "drop_err", err)
}

func (c *cachedStore) markDirty(k cacheKeys) {
	c.mu.Lock()
	c.dirty[k.m] = k
	c.mu.Unlock()
}

func (c *cachedStore) isDirty(k cacheKeys) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.dirty[k.m]
	return ok
}

// drainDirty retries dropping the entries of dirty sessions.
func (c *cachedStore) drainDirty(ctx context.Context) {
	c.mu.Lock()
	ks := make([]cacheKeys, 0, len(c.dirty))
	for _, k := range c.dirty {
		ks = append(ks, k)
	}
	c.mu.Unlock()
	if len(ks) == 0 {
		return
	}
	pipe := c.rdb.Pipeline()
	cmds := make([]*redis.Cmd, len(ks))
	for i, k := range ks {
		cmds[i] = pipe.Eval(ctx, invalidateScript, k.all(), ttlMS())
	}
	_, _ = pipe.Exec(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, k := range ks {
		if cmds[i].Err() == nil {
			delete(c.dirty, k.m)
		}
	}
}

// setDedup sets the dedup key of every message of the applied turns, last.
func (c *cachedStore) setDedup(ctx context.Context, turns []store.Turn, res []store.ApplyResult) {
	pipe := c.rdb.Pipeline()
	n := 0
	for i, t := range turns {
		if res[i].Tombstoned || res[i].Foreign {
			continue
		}
		for _, m := range t.Messages {
			pipe.Set(ctx, c.dedupKey(t.AccountID, t.SessionID, m.MessageID), "1", CacheTTL)
			n++
		}
	}
	if n == 0 {
		return
	}
	if _, err := pipe.Exec(ctx); err != nil {
		c.failed("dedup")
		c.log.Warn("session dedup keys not set (replays will reach SQL's unique key)", "err", err)
	}
}

// read returns the cached row and its newest n messages (0: all, -1: none) in ascending seq;
// ok is false on a miss, and gen is then the generation a backfill must be written under.
func (c *cachedStore) read(ctx context.Context, k cacheKeys, n int) (sess *store.Session, msgs []store.Message, gen string, ok bool, err error) {
	vals, err := c.rdb.Eval(ctx, readScript, k.all(), n).StringSlice()
	if err != nil {
		return nil, nil, "", false, err
	}
	if len(vals) < 2 {
		return nil, nil, "", false, fmt.Errorf("read: unexpected reply %v", vals)
	}
	if vals[0] == "miss" {
		return nil, nil, vals[1], false, nil
	}
	sess = &store.Session{}
	if err := json.Unmarshal([]byte(vals[1]), sess); err != nil {
		return nil, nil, "", false, fmt.Errorf("decode cached session: %w", err)
	}
	low, high := hotRange(sess)
	for i := len(vals) - 1; i >= 2; i-- { // bodies come newest first
		m, err := decodeMessage(k, vals[i])
		if err != nil {
			return nil, nil, "", false, fmt.Errorf("decode cached message: %w", err)
		}
		if m.Seq >= low && m.Seq <= high {
			msgs = append(msgs, m)
		}
	}
	return sess, msgs, "", true, nil
}

// load returns the session row (nil for an unknown session) and its newest n active messages
// in ascending seq — n 0: the whole cached range (the newest HotMessages), -1: none — from
// the cache, or on a miss from SQL followed by a backfill, or from SQL alone when the cache
// failed or the session is dirty.
func (c *cachedStore) load(ctx context.Context, account, session string, n int) (*store.Session, []store.Message, error) {
	k := c.keys(account, session)
	cctx, cancel := cacheCtx(ctx)
	c.drainDirty(cctx)
	cancel()
	if !c.isDirty(k) {
		cctx, cancel := cacheCtx(ctx)
		sess, msgs, gen, ok, err := c.read(cctx, k, n)
		cancel()
		switch {
		case err != nil:
			c.failed("read")
			c.log.Warn("session cache read failed; reading SQL", "account", account, "session", session, "err", err)
		case ok:
			if fresh, stale := c.verify(ctx, k, sess); !stale {
				return fresh, msgs, nil
			}
			// Another writer moved the session without reaching this cache (its update and
			// drop both failed, or it has no cache): drop the entry and read SQL.
			cctx, cancel := cacheCtx(ctx)
			c.drop(cctx, k, "stale", errors.New("cached session behind SQL"))
			cancel()
		default:
			return c.fill(ctx, k, gen, n)
		}
	}
	sess, err := c.sql.st.GetSession(ctx, account, session)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, nil
	}
	if err != nil || n < 0 {
		return sess, nil, err
	}
	msgs, err := c.sql.newest(ctx, sess, HotMessages)
	if n > 0 && len(msgs) > n {
		msgs = msgs[len(msgs)-n:]
	}
	return sess, msgs, err
}

// verify checks a cache hit against the session's SQL row (one primary-key read): a hit whose
// seq range differs from SQL's is stale. It returns the SQL row, so meta fields other writers
// change (overview, epoch) are always current. When SQL cannot answer, the hit is served as is.
func (c *cachedStore) verify(ctx context.Context, k cacheKeys, cached *store.Session) (*store.Session, bool) {
	cur, err := c.sql.st.GetSession(ctx, k.account, k.session)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, true // erased since it was cached
	case err != nil:
		return cached, false
	}
	return cur, cur.NextSeq != cached.NextSeq || cur.ArchivedUpto != cached.ArchivedUpto
}

// fill reads the session from SQL after a miss and backfills the cache under gen.
func (c *cachedStore) fill(ctx context.Context, k cacheKeys, gen string, n int) (*store.Session, []store.Message, error) {
	sess, err := c.sql.st.GetSession(ctx, k.account, k.session)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	msgs, err := c.sql.newest(ctx, sess, HotMessages)
	if err != nil {
		return nil, nil, err
	}
	args, err := entryArgs(sess, msgs)
	if err == nil {
		cctx, cancel := cacheCtx(ctx)
		err = c.rdb.Eval(cctx, backfillScript, k.all(), append([]any{gen, ttlMS()}, args...)...).Err()
		cancel()
	}
	if err != nil {
		c.failed("backfill")
		c.log.Warn("session cache backfill failed", "account", k.account, "session", k.session, "err", err)
	}
	if n > 0 && len(msgs) > n {
		msgs = msgs[len(msgs)-n:]
	}
	return sess, msgs, nil
}

func (c *cachedStore) Active(ctx context.Context, account, session string, limit int) ([]store.Message, error) {
	n := 0
	if limit > 0 && limit <= HotMessages {
		n = limit
	}
	sess, msgs, err := c.load(ctx, account, session, n)
	if err != nil || sess == nil {
		return nil, err
	}
	if n == 0 && !complete(sess) {
		// More than the cache holds was asked for.
		msgs, err = c.sql.newest(ctx, sess, limit)
		if err != nil {
			return nil, err
		}
	}
	sortHistory(msgs)
	return msgs, nil
}

func (c *cachedStore) Meta(ctx context.Context, account, session string) (*store.Session, error) {
	sess, _, err := c.load(ctx, account, session, -1)
	if err != nil {
		return nil, err
	}
	if sess == nil {
		return nil, store.ErrNotFound
	}
	return sess, nil
}

func (c *cachedStore) Window(ctx context.Context, account, session string, budget, reserve int) ([]store.Message, int, error) {
	sess, msgs, err := c.load(ctx, account, session, 0)
	if err != nil || sess == nil {
		return nil, 0, err
	}
	if msgs == nil {
		msgs = []store.Message{} // the cached range is empty, not unknown
	}
	return c.sql.window(ctx, sess, msgs, budget, reserve)
}

func (c *cachedStore) Invalidate(ctx context.Context, account, session string) error {
	k := c.keys(account, session)
	cctx, cancel := cacheCtx(ctx)
	defer cancel()
	if err := c.rdb.Eval(cctx, invalidateScript, k.all(), ttlMS()).Err(); err != nil {
		c.failed("invalidate")
		c.markDirty(k)
		return fmt.Errorf("invalidate session cache %s: %w", session, err)
	}
	return nil
}

func (c *cachedStore) SeenRecently(ctx context.Context, account, session, messageID string) bool {
	cctx, cancel := cacheCtx(ctx)
	defer cancel()
	n, err := c.rdb.Exists(cctx, c.dedupKey(account, session, messageID)).Result()
	if err != nil {
		c.failed("dedup")
		return false
	}
	return n == 1
}

// ForgetDedup deletes the dedup keys of erased messages (docs/design.md §5 "Erasure").
func (c *cachedStore) ForgetDedup(ctx context.Context, account, session string, messageIDs []string) error {
	cctx, cancel := cacheCtx(ctx)
	defer cancel()
	for start := 0; start < len(messageIDs); start += 500 {
		end := min(start+500, len(messageIDs))
		keys := make([]string, 0, end-start)
		for _, id := range messageIDs[start:end] {
			keys = append(keys, c.dedupKey(account, session, id))
		}
		if err := c.rdb.Del(cctx, keys...).Err(); err != nil {
			c.failed("dedup")
			return fmt.Errorf("forget dedup keys: %w", err)
		}
	}
	return nil
}

// dedupKey is <prefix>dedup:<account>:<md5 of account, session and message id>.
func (c *cachedStore) dedupKey(account, session, messageID string) string {
	return c.prefix + "dedup:" + account + ":" + DedupHash(account, session, messageID)
}

// DedupHash is the MD5 hex of account, session and message id joined by 0x1f.
func DedupHash(account, session, messageID string) string {
	return md5Hex(account + "\x1f" + session + "\x1f" + messageID)
}

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}
