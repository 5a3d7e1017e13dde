package gateway

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/membus/membus/services/gateway/request"
)

// codeRateLimited is the error code of a 429.
const codeRateLimited = "rate_limited"

// rateLimiter is a token bucket per key: Config.RateLimit tokens a second, at most
// Config.RateBurst. allow takes one token, or says how long until one is there.
type rateLimiter interface {
	allow(ctx context.Context, key string) (ok bool, retryAfter time.Duration, err error)
}

// rateLimit answers 429 with Retry-After (whole seconds, at least 1) when the caller's bucket
// is empty. A limiter that fails (Redis down) lets the request through: the limit protects the
// service, and refusing every request while Redis is away would be an outage of its own.
func (s *Service) rateLimit(w http.ResponseWriter, r *http.Request, id identity) *request.Error {
	ok, wait, err := s.limiter.allow(r.Context(), id.rateKey())
	if err != nil {
		s.log.Warn("rate limiter unavailable; request let through", "error", err.Error())
		return nil
	}
	if ok {
		return nil
	}
	secs := max(1, int(math.Ceil(wait.Seconds())))
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	return &request.Error{Status: http.StatusTooManyRequests, Code: codeRateLimited,
		Message: fmt.Sprintf("over %g requests per second (burst %d) for this key; retry after %d s", s.cfg.RateLimit, s.cfg.RateBurst, secs)}
}

// memoryLimiter keeps the buckets in this replica (no Redis): each replica allows the full
// rate on its own.
type memoryLimiter struct {
	rate  float64
	burst float64
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

// maxIdleBuckets bounds the map: past it, full (idle) buckets are dropped.
const maxIdleBuckets = 10000

func newMemoryLimiter(rate float64, burst int, now func() time.Time) *memoryLimiter {
	return &memoryLimiter{rate: rate, burst: float64(burst), now: now, buckets: map[string]*bucket{}}
}

func (l *memoryLimiter) allow(_ context.Context, key string) (bool, time.Duration, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b, ok := l.buckets[key]
	if !ok {
		if len(l.buckets) >= maxIdleBuckets {
			l.sweep(now)
		}
		b = &bucket{tokens: l.burst, at: now}
		l.buckets[key] = b
	}
	b.tokens = math.Min(l.burst, b.tokens+now.Sub(b.at).Seconds()*l.rate)
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0, nil
	}
	return false, time.Duration((1 - b.tokens) / l.rate * float64(time.Second)), nil
}

func (l *memoryLimiter) sweep(now time.Time) {
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.at).Seconds()*l.rate >= l.burst {
			delete(l.buckets, k)
		}
	}
}

// redisLimiter keeps the buckets in Redis, so every gateway replica shares one limit per key.
// The bucket is a hash (tokens, ms) updated atomically by a script; the clock is the
// gateway's (replicas' clocks are assumed close; a skew only shifts refill slightly).
type redisLimiter struct {
	rdb    redis.UniversalClient
	prefix string
	rate   float64
	burst  int
	now    func() time.Time
}

func newRedisLimiter(rdb redis.UniversalClient, prefix string, rate float64, burst int, now func() time.Time) *redisLimiter {
	return &redisLimiter{rdb: rdb, prefix: prefix, rate: rate, burst: burst, now: now}
}

var tokenBucket = redis.NewScript(`
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local v = redis.call('HMGET', KEYS[1], 'tokens', 'ms')
local tokens = tonumber(v[1])
local at = tonumber(v[2])
if tokens == nil or at == nil then tokens = burst; at = now end
if now > at then tokens = math.min(burst, tokens + (now - at) / 1000 * rate) end
local ok = 0
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
  ok = 1
else
  wait = math.ceil((1 - tokens) / rate * 1000)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ms', tostring(math.max(now, at)))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
return {ok, wait}
`)

func (l *redisLimiter) allow(ctx context.Context, key string) (bool, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	res, err := tokenBucket.Run(ctx, l.rdb, []string{l.prefix + key}, l.rate, l.burst, l.now().UnixMilli()).Int64Slice()
	if err != nil {
		return false, 0, fmt.Errorf("rate limit script: %w", err)
	}
	if len(res) != 2 {
		return false, 0, fmt.Errorf("rate limit script answered %v", res)
	}
	return res[0] == 1, time.Duration(res[1]) * time.Millisecond, nil
}
