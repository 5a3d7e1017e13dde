package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/services/gateway/request"
)

// Error codes of Idempotency-Key misuse.
const (
	codeConflict         = "conflict"
	codeIdempotencyReuse = "idempotency_key_reused"
)

// headerReplayed marks an answer replayed for a repeated Idempotency-Key.
const headerReplayed = "Idempotent-Replayed"

// storedResponse is a write's first answer, kept under its Idempotency-Key.
type storedResponse struct {
	Fingerprint string `json:"fp"` // hash of the request body and query: the same key with another request is refused
	Status      int    `json:"status"`
	Body        []byte `json:"body"`
}

// idempotencyStore keeps, per scoped key, either a reservation (the first request is running)
// or its answer. reserve returns the stored answer (done), or reserves the key (reserved), or
// neither when another request holds the reservation.
type idempotencyStore interface {
	reserve(ctx context.Context, key string, ttl time.Duration) (prev *storedResponse, reserved bool, err error)
	save(ctx context.Context, key string, resp storedResponse, ttl time.Duration) error
	release(ctx context.Context, key string) error
}

// idempotent makes a write safe to retry (docs/design.md §11): with an Idempotency-Key header, the first
// answer (any status but 5xx and 429, which are worth retrying) is kept for
// Config.IdempotencyTTL and a retry with the same key is answered with it — same status and
// body, header Idempotent-Replayed: true — without running the write again. The key is scoped
// to the caller's account and user, the route and the path; reusing it for another body is
// 422, and a retry while the first is still running is 409.
func (s *Service) idempotent(h func(http.ResponseWriter, *http.Request, identity)) func(http.ResponseWriter, *http.Request, identity) {
	return func(w http.ResponseWriter, r *http.Request, id identity) {
		key, aerr := idempotencyKey(r)
		if aerr != nil {
			writeError(w, aerr)
			return
		}
		if key == "" {
			h(w, r, id)
			return
		}
		body, aerr := s.readBody(w, r)
		if aerr != nil {
			writeError(w, aerr)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		scoped := bus.MsgID("idempotency", id.Account, id.User, r.Pattern, r.URL.Path, key)
		fp := sha256Hex(append(append([]byte{}, body...), "\x1f"+r.URL.RawQuery...))
		ctx := context.WithoutCancel(r.Context())
		prev, reserved, err := s.idem.reserve(ctx, scoped, s.cfg.IdempotencyTTL)
		if err != nil {
			s.log.Warn("idempotency store unavailable", "error", err.Error())
			writeError(w, unavailable("the idempotency store is unavailable; retry"))
			return
		}
		switch {
		case prev != nil && prev.Fingerprint != fp:
			writeError(w, &request.Error{Status: http.StatusUnprocessableEntity, Code: codeIdempotencyReuse,
				Message: headerIdempotencyKey + " was used for a different request; use a new key"})
			return
		case prev != nil:
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set(headerReplayed, "true")
			w.WriteHeader(prev.Status)
			_, _ = w.Write(prev.Body)
			return
		case !reserved:
			writeError(w, &request.Error{Status: http.StatusConflict, Code: codeConflict,
				Message: "a request with this " + headerIdempotencyKey + " is still running; retry later"})
			return
		}
		rec := &recordingWriter{ResponseWriter: w}
		defer func() {
			status := rec.status
			if status == 0 {
				status = http.StatusOK
			}
			if status >= 500 || status == http.StatusTooManyRequests {
				if err := s.idem.release(ctx, scoped); err != nil {
					s.log.Warn("idempotency key release failed", "error", err.Error())
				}
				return
			}
			if err := s.idem.save(ctx, scoped, storedResponse{Fingerprint: fp, Status: status, Body: rec.body.Bytes()}, s.cfg.IdempotencyTTL); err != nil {
				s.log.Warn("idempotency answer not kept", "error", err.Error())
			}
		}()
		h(rec, r, id)
	}
}

// recordingWriter passes the answer through and keeps a copy.
type recordingWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (w *recordingWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recordingWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.body.Write(b)
	return w.ResponseWriter.Write(b)
}

// memoryIdempotency keeps answers in this replica (no Redis): a retry that reaches another
// replica runs again (the writes behind it are idempotent by their own ids: commit request
// ids, message ids and memory ids derive from the key; deletes of what is gone answer 404).
type memoryIdempotency struct {
	now func() time.Time

	mu      sync.Mutex
	entries map[string]*idemEntry
	ops     int
}

type idemEntry struct {
	resp    *storedResponse // nil while reserved
	expires time.Time
}

func newMemoryIdempotency(now func() time.Time) *memoryIdempotency {
	return &memoryIdempotency{now: now, entries: map[string]*idemEntry{}}
}

// reservationTTL bounds a reservation whose request never finished (a crash mid-request).
const reservationTTL = 5 * time.Minute

func (m *memoryIdempotency) reserve(_ context.Context, key string, _ time.Duration) (*storedResponse, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if m.ops++; m.ops%1000 == 0 {
		for k, e := range m.entries {
			if now.After(e.expires) {
				delete(m.entries, k)
			}
		}
	}
	if e, ok := m.entries[key]; ok && now.Before(e.expires) {
		return e.resp, false, nil
	}
	m.entries[key] = &idemEntry{expires: now.Add(reservationTTL)}
	return nil, true, nil
}

func (m *memoryIdempotency) save(_ context.Context, key string, resp storedResponse, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entries[key] = &idemEntry{resp: &resp, expires: m.now().Add(ttl)}
	return nil
}

func (m *memoryIdempotency) release(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.entries, key)
	return nil
}

// redisIdempotency shares answers among every gateway replica: SET NX reserves the key, the
// answer replaces the reservation with the TTL.
type redisIdempotency struct {
	rdb    redis.UniversalClient
	prefix string
}

func newRedisIdempotency(rdb redis.UniversalClient, prefix string) *redisIdempotency {
	return &redisIdempotency{rdb: rdb, prefix: prefix}
}

const reservedMarker = "reserved"

func (r *redisIdempotency) reserve(ctx context.Context, key string, _ time.Duration) (*storedResponse, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	ok, err := r.rdb.SetNX(ctx, r.prefix+key, reservedMarker, reservationTTL).Result()
	if err != nil {
		return nil, false, err
	}
	if ok {
		return nil, true, nil
	}
	v, err := r.rdb.Get(ctx, r.prefix+key).Result()
	if errors.Is(err, redis.Nil) { // expired between the two calls: try once more
		ok, err = r.rdb.SetNX(ctx, r.prefix+key, reservedMarker, reservationTTL).Result()
		return nil, ok, err
	}
	if err != nil {
		return nil, false, err
	}
	if v == reservedMarker {
		return nil, false, nil
	}
	var resp storedResponse
	if err := json.NewDecoder(strings.NewReader(v)).Decode(&resp); err != nil {
		return nil, false, fmt.Errorf("stored idempotent answer: %w", err)
	}
	return &resp, false, nil
}

func (r *redisIdempotency) save(ctx context.Context, key string, resp storedResponse, ttl time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	b, err := json.Marshal(resp)
	if err != nil {
		return err
	}
	return r.rdb.Set(ctx, r.prefix+key, b, ttl).Err()
}

func (r *redisIdempotency) release(ctx context.Context, key string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return r.rdb.Del(ctx, r.prefix+key).Err()
}
