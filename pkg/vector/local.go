package vector

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/google/uuid"
)

// Local is the embedded vector store: cosine over float32 (through int8
// codes with exact re-scoring for a segment above the exact maximum,
// quant.go) plus a BM25 inverted index, partitioned by (account, user), held
// in memory (a large quantised segment's float32 vectors in a spill file)
// and persisted under its directory.
//
// Layout:
//
//	<dir>/manifest.json       format, model id, dimension, current generation
//	<dir>/g<N>/<p>.snap        snapshot of partition p (CRC-32C guarded)
//	<dir>/g<N>/<p>.log         writes since that snapshot (CRC per record)
//
// Every write appends one record to its partition's log and fsyncs it
// before returning; a torn tail left by a crash is cut off at the next open.
// When a log outgrows its snapshot, the partition is snapshotted (temp file,
// fsync, rename, fsync dir) and the log removed. Rebuild writes a whole new
// generation and switches the manifest to it with one atomic rename, so a
// crash mid-rebuild leaves the old generation intact.
type Local struct {
	dir      string
	model    string
	dim      int
	exactMax int
	spillMin int

	// opMu is held for reading by every operation and for writing by Close
	// and Rebuild, which replace or retire the partitions.
	opMu   sync.RWMutex
	closed bool
	gen    int

	partsMu sync.Mutex
	parts   map[partKey]*partition

	problems []string // data dropped at open, for the caller to log
}

type partKey struct{ account, user string }

type manifest struct {
	Format     int    `json:"format"`
	Model      string `json:"model"`
	Dim        int    `json:"dim"`
	Generation int    `json:"generation"`
}

const (
	manifestFile   = "manifest.json"
	manifestFormat = 1
	// A partition is snapshotted when its log holds at least this many
	// records and more bytes than its snapshot.
	compactMinRecords = 64
)

var (
	_ Store     = (*Local)(nil)
	_ Compactor = (*Local)(nil)
)

// LocalOption is an option of OpenLocal.
type LocalOption func(*Local)

// WithExactMax sets the largest number of points of one user and scope searched exactly
// (DefaultExactMax by default); a larger one is searched through int8 codes with exact
// re-scoring (quant.go). 0 searches every segment that way.
func WithExactMax(n int) LocalOption { return func(l *Local) { l.exactMax = max(n, 0) } }

// WithSpillMin sets the largest number of points of one user and scope, searched through
// codes, whose float32 vectors stay in memory (DefaultSpillMin by default); a larger one keeps
// them in a spill file under dir and reads back the ones it re-scores. 0 spills every
// quantised segment.
func WithSpillMin(n int) LocalOption { return func(l *Local) { l.spillMin = max(n, 0) } }

// OpenLocal opens (or creates) the local store in dir for vectors of model
// and dim. An existing index built for another model or dimension gives
// ErrModelMismatch. model "" and dim 0 adopt what the index stores (an error
// when there is no index yet). Damaged partition files are dropped and
// listed by Problems; Digest then disagrees with SQL and the caller
// rebuilds. Options: WithExactMax, WithSpillMin.
func OpenLocal(dir string, model string, dim int, opts ...LocalOption) (*Local, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open local vector store: %w", err)
	}
	m, err := readManifest(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if model == "" || dim <= 0 {
			return nil, fmt.Errorf("open local vector store %s: no index yet, model and dim required: %w", dir, ErrInvalid)
		}
		m = manifest{Format: manifestFormat, Model: model, Dim: dim, Generation: 1}
		if err := os.MkdirAll(genDir(dir, 1), 0o755); err != nil {
			return nil, fmt.Errorf("open local vector store: %w", err)
		}
		if err := writeManifest(dir, m); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, err
	default:
		if (model != "" && model != m.Model) || (dim > 0 && dim != m.Dim) {
			return nil, fmt.Errorf("open local vector store %s: index holds %s/%d, asked for %s/%d: %w",
				dir, m.Model, m.Dim, model, dim, ErrModelMismatch)
		}
	}
	l := &Local{dir: dir, model: m.Model, dim: m.Dim, exactMax: DefaultExactMax, spillMin: DefaultSpillMin, gen: m.Generation, parts: make(map[partKey]*partition)}
	for _, o := range opts {
		o(l)
	}
	if err := l.load(); err != nil {
		return nil, err
	}
	// Loading decodes every point once and drops it after copying it in: garbage the size of
	// the index, which the runtime would otherwise keep resident for minutes as its heap goal.
	debug.FreeOSMemory()
	return l, nil
}

// LocalModel returns the model id and dimension stored with the index in
// dir, or fs.ErrNotExist when there is none (MEMBUS_EMBEDDER=auto follows
// it).
func LocalModel(dir string) (model string, dim int, err error) {
	m, err := readManifest(dir)
	if err != nil {
		return "", 0, err
	}
	return m.Model, m.Dim, nil
}

func readManifest(dir string) (manifest, error) {
	var m manifest
	b, err := os.ReadFile(filepath.Join(dir, manifestFile))
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("read vector manifest: %w", err)
	}
	if m.Format != manifestFormat || m.Model == "" || m.Dim <= 0 || m.Generation <= 0 {
		return m, fmt.Errorf("read vector manifest: unsupported or incomplete %+v: %w", m, errCorrupt)
	}
	return m, nil
}

func writeManifest(dir string, m manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("write vector manifest: %w", err)
	}
	if err := writeFileAtomic(dir, manifestFile, append(b, '\n')); err != nil {
		return fmt.Errorf("write vector manifest: %w", err)
	}
	return nil
}

func genDir(dir string, gen int) string {
	return filepath.Join(dir, "g"+strconv.Itoa(gen))
}

func partitionFile(account, user string) string {
	sum := sha256.Sum256([]byte(account + "\x00" + user))
	return hex.EncodeToString(sum[:16])
}

// load reads the current generation and removes leftovers of others.
func (l *Local) load() error {
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("open local vector store: %w", err)
	}
	cur := "g" + strconv.Itoa(l.gen)
	// spill files are removed as soon as they are opened where the system allows it; what a
	// process that stopped left here is of no use
	if err := os.RemoveAll(spillDir(l.dir)); err != nil {
		return fmt.Errorf("remove stale spill files: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), "g") && e.Name() != cur {
			if err := os.RemoveAll(filepath.Join(l.dir, e.Name())); err != nil {
				return fmt.Errorf("remove stale generation: %w", err)
			}
		}
	}
	gdir := genDir(l.dir, l.gen)
	if err := os.MkdirAll(gdir, 0o755); err != nil {
		return fmt.Errorf("open local vector store: %w", err)
	}
	files, err := os.ReadDir(gdir)
	if err != nil {
		return fmt.Errorf("open local vector store: %w", err)
	}
	stems := map[string]bool{}
	for _, f := range files {
		name := f.Name()
		switch {
		case strings.HasSuffix(name, ".tmp"):
			_ = os.Remove(filepath.Join(gdir, name)) // an interrupted snapshot
		case strings.HasSuffix(name, ".snap"):
			stems[strings.TrimSuffix(name, ".snap")] = true
		case strings.HasSuffix(name, ".log"):
			stems[strings.TrimSuffix(name, ".log")] = true
		}
	}
	for stem := range stems {
		l.loadPartition(gdir, stem)
	}
	return nil
}

// loadPartition reads one partition's snapshot and replays its log. What
// cannot be read is dropped and recorded in l.problems.
func (l *Local) loadPartition(gdir, stem string) {
	var pt *partition
	snapPath := filepath.Join(gdir, stem+".snap")
	if b, release, err := readFileMapped(snapPath); err == nil {
		err := decodeSnapshot(b, func(account, user string) bool {
			if partitionFile(account, user) != stem {
				return false
			}
			pt = l.newPartition(account, user)
			return true
		}, func(p Point) { pt.put(p) })
		release()
		if err != nil {
			l.problems = append(l.problems, fmt.Sprintf("%s: dropped: %v", snapPath, err))
			_ = os.Remove(snapPath)
			if pt != nil {
				pt.release()
				pt = nil
			}
		} else {
			pt.snapBytes = int64(len(b))
		}
	}
	logPath := filepath.Join(gdir, stem+".log")
	if b, err := os.ReadFile(logPath); err == nil {
		recs, valid := decodeRecords(b)
		if len(recs) == 0 || recs[0].op != opHeader || partitionFile(recs[0].account, recs[0].user) != stem ||
			(pt != nil && (pt.account != recs[0].account || pt.user != recs[0].user)) {
			l.problems = append(l.problems, fmt.Sprintf("%s: dropped: no valid header", logPath))
			_ = os.Remove(logPath)
		} else {
			if pt == nil {
				pt = l.newPartition(recs[0].account, recs[0].user)
			}
			for _, r := range recs[1:] {
				switch r.op {
				case opUpsert:
					for _, p := range r.points {
						pt.put(p)
					}
				case opDelete:
					for _, id := range r.ids {
						pt.remove(id)
					}
				}
			}
			if valid < len(b) {
				l.problems = append(l.problems, fmt.Sprintf("%s: cut torn tail at byte %d of %d", logPath, valid, len(b)))
				if err := os.Truncate(logPath, int64(valid)); err != nil {
					l.problems = append(l.problems, fmt.Sprintf("%s: truncate: %v", logPath, err))
				}
			}
			pt.logRecords = len(recs)
			pt.logBytes = int64(valid)
		}
	}
	if pt != nil {
		pt.trim()
		l.parts[partKey{pt.account, pt.user}] = pt
	}
}

// Problems lists the damaged files dropped or repaired at open.
func (l *Local) Problems() []string { return slices.Clone(l.problems) }

// Model returns the embedding model id stored with the index.
func (l *Local) Model() string { return l.model }

// Dim returns the vector dimension of the index.
func (l *Local) Dim() int { return l.dim }

// begin takes the operation lock; the caller must call l.opMu.RUnlock.
func (l *Local) begin(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.opMu.RLock()
	if l.closed {
		l.opMu.RUnlock()
		return ErrClosed
	}
	return nil
}

// newPartition returns an empty partition with the store's exact maximum, spill minimum and
// spill dir.
func (l *Local) newPartition(account, user string) *partition {
	return newPartition(account, user, l.exactMax, l.spillMin, spillDir(l.dir))
}

// partition returns the tenant's partition, creating it when create is set.
func (l *Local) partition(account, user string, create bool) *partition {
	l.partsMu.Lock()
	defer l.partsMu.Unlock()
	k := partKey{account, user}
	pt := l.parts[k]
	if pt == nil && create {
		pt = l.newPartition(account, user)
		l.parts[k] = pt
	}
	return pt
}

// canonicalID returns id in canonical UUID form.
func canonicalID(id string) (string, bool) {
	u, err := uuid.Parse(id)
	if err != nil {
		return "", false
	}
	return u.String(), true
}

func (l *Local) checkPoint(p *Point) error {
	if p.AccountID == "" || p.UserID == "" {
		return fmt.Errorf("point %s: %w", p.ID, ErrMissingTenant)
	}
	id, ok := canonicalID(p.ID)
	if !ok {
		return fmt.Errorf("point id %q is not a UUID: %w", p.ID, ErrInvalid)
	}
	p.ID = id
	if len(p.Vector) != l.dim {
		return fmt.Errorf("point %s: vector has %d dimensions, index has %d: %w", p.ID, len(p.Vector), l.dim, ErrInvalid)
	}
	return nil
}

// Upsert implements Store.
func (l *Local) Upsert(ctx context.Context, model string, pts []Point) error {
	if model != l.model {
		return fmt.Errorf("upsert %s vectors into %s index: %w", model, l.model, ErrModelMismatch)
	}
	// The points are encoded into the log and copied into the index before
	// Upsert returns: the caller's vectors and payloads are not retained.
	byPart := map[partKey][]Point{}
	var order []partKey
	for _, p := range pts {
		if err := l.checkPoint(&p); err != nil {
			return fmt.Errorf("upsert: %w", err)
		}
		k := partKey{p.AccountID, p.UserID}
		if _, ok := byPart[k]; !ok {
			order = append(order, k)
		}
		byPart[k] = append(byPart[k], p)
	}
	if err := l.begin(ctx); err != nil {
		return fmt.Errorf("upsert: %w", err)
	}
	defer l.opMu.RUnlock()
	for _, k := range order {
		pt := l.partition(k.account, k.user, true)
		if err := l.write(pt, &logRecord{op: opUpsert, points: byPart[k]}, func() {
			for _, p := range byPart[k] {
				pt.put(p)
			}
		}); err != nil {
			return fmt.Errorf("upsert: %w", err)
		}
	}
	return nil
}

// Delete implements Store. Ids that are not UUIDs cannot exist and are
// ignored like unknown ones.
func (l *Local) Delete(ctx context.Context, accountID, userID string, ids []string) error {
	if accountID == "" || userID == "" {
		return fmt.Errorf("delete: %w", ErrMissingTenant)
	}
	if err := l.begin(ctx); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	defer l.opMu.RUnlock()
	pt := l.partition(accountID, userID, false)
	if pt == nil {
		return nil
	}
	var del []string
	pt.mu.RLock()
	for _, id := range ids {
		if c, ok := canonicalID(id); ok && pt.has(c) {
			del = append(del, c)
		}
	}
	pt.mu.RUnlock()
	if len(del) == 0 {
		return nil
	}
	if err := l.write(pt, &logRecord{op: opDelete, ids: del}, func() {
		for _, id := range del {
			pt.remove(id)
		}
	}); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	return nil
}

// write appends rec to the partition's log (fsynced), then applies it in
// memory, then snapshots the partition when its log has grown.
func (l *Local) write(pt *partition, rec *logRecord, apply func()) error {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	gdir := genDir(l.dir, l.gen)
	if err := pt.appendLog(gdir, rec); err != nil {
		return err
	}
	apply()
	if pt.logRecords >= compactMinRecords && pt.logBytes > pt.snapBytes {
		if err := pt.snapshot(gdir); err != nil {
			// the log still holds every write; the next write retries
			return nil
		}
	}
	return nil
}

// appendLog appends rec to the log, creating it with a header record.
// The caller holds pt.mu.
func (pt *partition) appendLog(gdir string, rec *logRecord) error {
	path := filepath.Join(gdir, pt.file+".log")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("open vector log: %w", err)
	}
	buf := encodeRecord(rec)
	fresh := pt.logRecords == 0
	if fresh {
		buf = append(encodeRecord(&logRecord{op: opHeader, account: pt.account, user: pt.user}), buf...)
	}
	if _, err := f.Write(buf); err != nil {
		f.Close()
		return fmt.Errorf("append vector log: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync vector log: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close vector log: %w", err)
	}
	if fresh {
		if err := syncDir(gdir); err != nil {
			return err
		}
		pt.logRecords++
	}
	pt.logRecords++
	pt.logBytes += int64(len(buf))
	return nil
}

// snapshot writes the partition's snapshot and removes its log (replaying
// a log over a newer snapshot is harmless, so a crash between the two loses
// nothing). The caller holds pt.mu.
func (pt *partition) snapshot(gdir string) error {
	if pt.n == 0 {
		_ = os.Remove(filepath.Join(gdir, pt.file+".snap"))
	} else {
		b, err := pt.snapshotBytes()
		if err != nil {
			return err
		}
		if err := writeFileAtomic(gdir, pt.file+".snap", b); err != nil {
			return fmt.Errorf("snapshot vector partition: %w", err)
		}
		pt.snapBytes = int64(len(b))
	}
	if err := os.Remove(filepath.Join(gdir, pt.file+".log")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove vector log: %w", err)
	}
	pt.logRecords, pt.logBytes = 0, 0
	return syncDir(gdir)
}

// writeFileAtomic writes name in dir through a fsynced temp file and a
// rename, then fsyncs dir.
func writeFileAtomic(dir, name string, data []byte) error {
	tmp := filepath.Join(dir, name+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync dir: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}

// Get implements Store.
func (l *Local) Get(ctx context.Context, accountID, userID, id string) (Point, error) {
	if accountID == "" || userID == "" {
		return Point{}, fmt.Errorf("get: %w", ErrMissingTenant)
	}
	if err := l.begin(ctx); err != nil {
		return Point{}, fmt.Errorf("get: %w", err)
	}
	defer l.opMu.RUnlock()
	cid, ok := canonicalID(id)
	pt := l.partition(accountID, userID, false)
	if !ok || pt == nil {
		return Point{}, fmt.Errorf("get %s: %w", id, ErrNotFound)
	}
	pt.mu.RLock()
	defer pt.mu.RUnlock()
	p, ok, err := pt.get(cid)
	if err != nil {
		return Point{}, fmt.Errorf("get %s: %w", id, err)
	}
	if !ok {
		return Point{}, fmt.Errorf("get %s: %w", id, ErrNotFound)
	}
	return p, nil
}

var _ Scorer = (*Local)(nil)

// Cosines implements Scorer.
func (l *Local) Cosines(ctx context.Context, accountID, userID string, ids []string, vecs [][]float32) ([][]float64, error) {
	if accountID == "" || userID == "" {
		return nil, fmt.Errorf("cosines: %w", ErrMissingTenant)
	}
	for _, v := range vecs {
		if len(v) != l.dim {
			return nil, fmt.Errorf("cosines: a vector has %d dimensions, index has %d: %w", len(v), l.dim, ErrInvalid)
		}
	}
	if err := l.begin(ctx); err != nil {
		return nil, fmt.Errorf("cosines: %w", err)
	}
	defer l.opMu.RUnlock()
	out := make([][]float64, len(vecs))
	norms := make([]float64, len(vecs))
	for j, v := range vecs {
		out[j] = make([]float64, len(ids))
		norms[j] = norm(v)
	}
	pt := l.partition(accountID, userID, false)
	if pt == nil {
		return out, nil
	}
	pt.mu.RLock()
	defer pt.mu.RUnlock()
	buf := make([]float32, l.dim)
	for i, id := range ids {
		cid, ok := canonicalID(id)
		if !ok {
			continue
		}
		r, ok := pt.ids[cid]
		if !ok {
			continue
		}
		s := pt.segs[r.seg]
		v, err := s.loadVec(int(r.i), buf)
		if err != nil {
			return nil, fmt.Errorf("cosines: %w", err)
		}
		for j, q := range vecs {
			out[j][i] = dense(v, s.norms[r.i], q, norms[j])
		}
	}
	return out, nil
}

// Search implements Store.
func (l *Local) Search(ctx context.Context, f Filter, vector []float32, query string, k int) ([]Hit, error) {
	if f.AccountID == "" || f.UserID == "" {
		return nil, fmt.Errorf("search: %w", ErrMissingTenant)
	}
	if k <= 0 {
		return nil, fmt.Errorf("search: k = %d: %w", k, ErrInvalid)
	}
	if len(vector) > 0 && len(vector) != l.dim {
		return nil, fmt.Errorf("search: query vector has %d dimensions, index has %d: %w", len(vector), l.dim, ErrInvalid)
	}
	if err := l.begin(ctx); err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	defer l.opMu.RUnlock()
	pt := l.partition(f.AccountID, f.UserID, false)
	if pt == nil {
		return []Hit{}, nil
	}
	pt.mu.RLock()
	defer pt.mu.RUnlock()
	hits, err := pt.search(f, vector, query, k)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	return hits, nil
}

// Scroll implements Store.
func (l *Local) Scroll(ctx context.Context, f Filter, after string, limit int) ([]Point, string, error) {
	if f.AccountID == "" || f.UserID == "" {
		return nil, "", fmt.Errorf("scroll: %w", ErrMissingTenant)
	}
	if limit <= 0 {
		return nil, "", fmt.Errorf("scroll: limit = %d: %w", limit, ErrInvalid)
	}
	if err := l.begin(ctx); err != nil {
		return nil, "", fmt.Errorf("scroll: %w", err)
	}
	defer l.opMu.RUnlock()
	pt := l.partition(f.AccountID, f.UserID, false)
	if pt == nil {
		return []Point{}, "", nil
	}
	if after != "" {
		if c, ok := canonicalID(after); ok {
			after = c
		}
	}
	pt.mu.RLock()
	defer pt.mu.RUnlock()
	refs := pt.sortedRefs(f, after)
	more := len(refs) > limit
	if more {
		refs = refs[:limit]
	}
	out := make([]Point, len(refs))
	for i, r := range refs {
		p, err := pt.point(r)
		if err != nil {
			return nil, "", fmt.Errorf("scroll: %w", err)
		}
		out[i] = p
	}
	next := ""
	if more {
		next = out[len(out)-1].ID
	}
	return out, next, nil
}

// Count implements Store.
func (l *Local) Count(ctx context.Context, accountID string) (int, error) {
	if accountID == "" {
		return 0, fmt.Errorf("count: %w", ErrMissingTenant)
	}
	n, _, err := l.Digest(ctx, accountID)
	return n, err
}

// Digest returns the number of points of the account ("" = every account)
// and DigestIDs of their ids: compare it with the same figures computed
// from SQL's indexed memories to decide whether to Rebuild.
func (l *Local) Digest(ctx context.Context, accountID string) (count int, sum string, err error) {
	if err := l.begin(ctx); err != nil {
		return 0, "", fmt.Errorf("digest: %w", err)
	}
	defer l.opMu.RUnlock()
	l.partsMu.Lock()
	var parts []*partition
	for k, pt := range l.parts {
		if accountID == "" || k.account == accountID {
			parts = append(parts, pt)
		}
	}
	l.partsMu.Unlock()
	var ids []string
	for _, pt := range parts {
		pt.mu.RLock()
		for id := range pt.ids {
			ids = append(ids, id)
		}
		pt.mu.RUnlock()
	}
	return len(ids), DigestIDs(ids), nil
}

// Len is the number of points of every account (the index size an operator watches); cheaper
// than Digest, which also hashes every id.
func (l *Local) Len(ctx context.Context) (int, error) {
	if err := l.begin(ctx); err != nil {
		return 0, fmt.Errorf("len: %w", err)
	}
	defer l.opMu.RUnlock()
	l.partsMu.Lock()
	parts := make([]*partition, 0, len(l.parts))
	for _, pt := range l.parts {
		parts = append(parts, pt)
	}
	l.partsMu.Unlock()
	n := 0
	for _, pt := range parts {
		pt.mu.RLock()
		n += len(pt.ids)
		pt.mu.RUnlock()
	}
	return n, nil
}

// DigestIDs is the digest Digest reports: SHA-256 hex over the sorted,
// de-duplicated, canonical (lower-case) ids, one per line.
func DigestIDs(ids []string) string {
	c := make([]string, 0, len(ids))
	for _, id := range ids {
		if u, ok := canonicalID(id); ok {
			id = u
		}
		c = append(c, id)
	}
	slices.Sort(c)
	c = slices.Compact(c)
	h := sha256.New()
	for _, id := range c {
		h.Write([]byte(id))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Rebuild replaces the whole index with pts (SQL's stored embeddings, all of
// the index's model). The new generation is written in full, fsynced, and
// switched to by one manifest rename; a crash before that leaves the old
// index as it was.
func (l *Local) Rebuild(ctx context.Context, pts []Point) error {
	parts := map[partKey]*partition{}
	swapped := false
	defer func() {
		if !swapped {
			for _, pt := range parts {
				pt.release()
			}
		}
	}()
	for _, p := range pts {
		if err := l.checkPoint(&p); err != nil {
			return fmt.Errorf("rebuild: %w", err)
		}
		k := partKey{p.AccountID, p.UserID}
		if parts[k] == nil {
			parts[k] = l.newPartition(k.account, k.user)
		}
		parts[k].put(p)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("rebuild: %w", err)
	}
	l.opMu.Lock()
	defer l.opMu.Unlock()
	if l.closed {
		return fmt.Errorf("rebuild: %w", ErrClosed)
	}
	next := l.gen + 1
	ndir := genDir(l.dir, next)
	if err := os.RemoveAll(ndir); err != nil {
		return fmt.Errorf("rebuild: %w", err)
	}
	if err := os.MkdirAll(ndir, 0o755); err != nil {
		return fmt.Errorf("rebuild: %w", err)
	}
	for _, pt := range parts {
		if err := ctx.Err(); err != nil {
			_ = os.RemoveAll(ndir)
			return fmt.Errorf("rebuild: %w", err)
		}
		b, err := pt.snapshotBytes()
		if err == nil {
			err = writeFileAtomic(ndir, pt.file+".snap", b)
		}
		if err != nil {
			_ = os.RemoveAll(ndir)
			return fmt.Errorf("rebuild: %w", err)
		}
		pt.snapBytes = int64(len(b))
	}
	if err := syncDir(l.dir); err != nil {
		return fmt.Errorf("rebuild: %w", err)
	}
	if err := writeManifest(l.dir, manifest{Format: manifestFormat, Model: l.model, Dim: l.dim, Generation: next}); err != nil {
		return fmt.Errorf("rebuild: %w", err)
	}
	old := genDir(l.dir, l.gen)
	l.gen = next
	l.partsMu.Lock()
	prev := l.parts
	l.parts = parts
	l.partsMu.Unlock()
	swapped = true
	for _, pt := range prev { // no operation holds them: opMu is held for writing
		pt.release()
	}
	if err := os.RemoveAll(old); err != nil {
		return fmt.Errorf("rebuild: remove old generation: %w", err)
	}
	return nil
}

// Compact rewrites the tenant's partition from its live points: a fresh snapshot (none when
// the partition is empty) and no log, so the text, payload and vector of every point deleted
// before are in no file of the index any more (Compactor; erasure calls it).
func (l *Local) Compact(ctx context.Context, accountID, userID string) error {
	if accountID == "" || userID == "" {
		return fmt.Errorf("compact: %w", ErrMissingTenant)
	}
	if err := l.begin(ctx); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	defer l.opMu.RUnlock()
	pt := l.partition(accountID, userID, false)
	if pt == nil {
		return nil
	}
	pt.mu.Lock()
	defer pt.mu.Unlock()
	if err := pt.snapshot(genDir(l.dir, l.gen)); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	return nil
}

// Close snapshots partitions with pending log records and closes the store.
func (l *Local) Close() error {
	l.opMu.Lock()
	defer l.opMu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	gdir := genDir(l.dir, l.gen)
	var errs []error
	for _, pt := range l.parts {
		pt.mu.Lock()
		if pt.logRecords > 0 {
			errs = append(errs, pt.snapshot(gdir))
		}
		pt.release()
		pt.mu.Unlock()
	}
	return errors.Join(errs...)
}
