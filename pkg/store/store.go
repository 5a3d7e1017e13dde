// Package store is membus's SQL source of truth: one Store over MySQL/MariaDB (distributed
// mode) or SQLite (embedded mode), with the schema migrations of schemas/sql applied at Open.
// Times are stored as unix microseconds so both dialects share one representation.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/membus/membus/pkg/stages"
)

// Dialects.
const (
	MySQL  = "mysql"
	SQLite = "sqlite"
)

// Sentinel errors.
var (
	ErrNotFound   = errors.New("not found")
	ErrFenced     = errors.New("fenced: the session epoch moved on (another holder took the lock)")
	ErrTombstoned = errors.New("tombstoned: the user or session was erased")
)

// Store is the SQL store. Safe for concurrent use.
type Store struct {
	db      *sql.DB
	dialect string
	now     func() time.Time
	// claimMu keeps the outbox claims of this process apart on SQLite (outboxStore.Claim).
	claimMu sync.Mutex
	// stmts holds the statements prepared once (query text → *sql.Stmt), SQLite only (query).
	stmts sync.Map
	// writeGate queues this process's write transactions, walKick, walStop and walDone drive
	// the background checkpoints: SQLite only (wal.go).
	writeGate, walKick, walStop, walDone chan struct{}
	walStopOnce                          sync.Once
}

// Option configures a Store.
type Option func(*Store)

// WithClock sets the clock used for timestamps (tests).
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// sqliteConns is the size of SQLite's connection pool.
const sqliteConns = 4

// OpenSQLite opens (creating) the SQLite database at path and applies the migrations. Every
// connection runs with secure_delete on: deleted rows are overwritten with zeros in their pages
// and freed pages are zeroed, so erased text does not linger in free space (Checkpoint then
// clears the WAL's older copies of those pages). The WAL is checkpointed in the background
// rather than inside a commit (wal.go).
func OpenSQLite(ctx context.Context, path string, opts ...Option) (*Store, error) {
	dsn := "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=foreign_keys(ON)" +
		"&_pragma=secure_delete(ON)&_pragma=wal_autocheckpoint(0)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	// One writer at a time is SQLite's rule; a small pool keeps readers off the writer's back.
	// All of it stays open: database/sql keeps 2 idle connections by default, and one recall
	// reads on more at once (its scopes, the memories' places, the archive items it keeps), so
	// the others were closed after such a recall and opened again by a later one, with their
	// pragmas, statements and page cache (116 reopened in 2,000 recalls of `membus bench
	// recall --archive`).
	db.SetMaxOpenConns(sqliteConns)
	db.SetMaxIdleConns(sqliteConns)
	s, err := open(ctx, db, SQLite, opts)
	if err != nil {
		return nil, err
	}
	s.startWALCheckpointer()
	return s, nil
}

// OpenMySQL opens a MySQL/MariaDB database (go-sql-driver DSN) and applies the migrations.
func OpenMySQL(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("MEMBUS_MYSQL_DSN: %w", err)
	}
	cfg.ParseTime = true
	cfg.MultiStatements = true
	// One round trip per statement instead of three (prepare, execute, close); safe with
	// utf8mb4, which is the only character set membus uses.
	cfg.InterpolateParams = true
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = 30 * time.Second
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = 30 * time.Second
	}
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return nil, fmt.Errorf("open mysql: %w", err)
	}
	db.SetMaxOpenConns(32)
	db.SetMaxIdleConns(8)
	db.SetConnMaxLifetime(5 * time.Minute)
	return open(ctx, db, MySQL, opts)
}

// ErrCollation is returned by OpenMySQL for a database whose default collation is not binary.
var ErrCollation = errors.New("the database's collation is not binary")

// checkCollation refuses a database that compares strings case- or accent-insensitively: ids
// (message, session, user) are case-sensitive, and the batch insert of ApplyTurns matches the
// rows the unique key kept by exact bytes, so "A" and "a" must be two ids, as they are under
// utf8mb4_bin (every script and the compose file create the database so).
func checkCollation(ctx context.Context, db *sql.DB) error {
	var name sql.NullString
	if err := db.QueryRowContext(ctx, "SELECT @@collation_database").Scan(&name); err != nil {
		return fmt.Errorf("read the database's collation: %w", err)
	}
	if !strings.HasSuffix(name.String, "_bin") {
		return fmt.Errorf("%w (%s): membus's ids are case-sensitive; create the database with CHARACTER SET utf8mb4 COLLATE utf8mb4_bin (an empty one: ALTER DATABASE <name> CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)", ErrCollation, name.String)
	}
	return nil
}

func open(ctx context.Context, db *sql.DB, dialect string, opts []Option) (*Store, error) {
	s := &Store{db: db, dialect: dialect, now: time.Now}
	for _, o := range opts {
		o(s)
	}
	// A server that does not answer in 10 s is down or unreachable: say so rather than hang. A
	// SQLite file has no server: its open waits on the disk only (CI saw a first fsync of a new
	// database take longer than 10 s on a busy disk), so it is bounded by the caller's context.
	pctx, cancel := ctx, context.CancelFunc(func() {})
	if dialect == MySQL {
		pctx, cancel = context.WithTimeout(ctx, 10*time.Second)
	}
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect %s: %w", dialect, err)
	}
	if dialect == MySQL {
		if err := checkCollation(pctx, db); err != nil {
			db.Close()
			return nil, err
		}
	}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Dialect returns MySQL or SQLite.
func (s *Store) Dialect() string { return s.dialect }

// DB exposes the pool for tests and tools.
func (s *Store) DB() *sql.DB { return s.db }

// Close closes the pool.
func (s *Store) Close() error {
	s.stopWALCheckpointer()
	s.stmts.Range(func(q, st any) bool {
		_ = st.(*sql.Stmt).Close()
		s.stmts.Delete(q)
		return true
	})
	return s.db.Close()
}

// Ping is the health probe of the SQL dependency.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var one int
	return s.db.QueryRowContext(ctx, "SELECT 1").Scan(&one)
}

func (s *Store) nowUS() int64 { return s.now().UnixMicro() }

// insertIgnore is the dialect's INSERT that skips rows violating a unique key.
func (s *Store) insertIgnore() string {
	if s.dialect == MySQL {
		return "INSERT IGNORE INTO"
	}
	return "INSERT OR IGNORE INTO"
}

// forUpdate locks selected rows on MySQL; SQLite's write transaction already excludes writers.
func (s *Store) forUpdate() string {
	if s.dialect == MySQL {
		return " FOR UPDATE"
	}
	return ""
}

// IsRetryable reports whether err is a transient conflict worth retrying at once: MySQL
// deadlock (1213) or lock wait timeout (1205), SQLite BUSY/LOCKED.
func IsRetryable(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number == 1213 || me.Number == 1205
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		code := se.Code() & 0xff
		return code == sqlite3.SQLITE_BUSY || code == sqlite3.SQLITE_LOCKED
	}
	return strings.Contains(strings.ToLower(fmt.Sprint(err)), "database is locked")
}

// inTx runs fn in a transaction, retrying retryable conflicts at once with jitter.
func (s *Store) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	const attempts = 8
	var err error
	for i := 0; i < attempts; i++ {
		err = s.tryTx(ctx, fn)
		if err == nil || !IsRetryable(err) {
			return err
		}
		d := time.Duration(1+rand.IntN(10*(i+1))) * time.Millisecond
		wait := time.Now()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
		}
		stages.FromContext(ctx).Since(StageSQLBegin, wait)
	}
	return err
}

func (s *Store) tryTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	// READ COMMITTED on MySQL: every statement sees what other transactions committed before
	// it, not a snapshot from the transaction's first read (REPEATABLE READ), so a sum read
	// after taking the session row lock includes a concurrent replica's messages.
	var opts *sql.TxOptions
	if s.dialect == MySQL {
		opts = &sql.TxOptions{Isolation: sql.LevelReadCommitted}
	}
	tm := stages.FromContext(ctx)
	start := time.Now()
	unlock, err := s.lockWrites(ctx)
	if err != nil {
		tm.Since(StageSQLBegin, start)
		return err
	}
	defer unlock()
	tx, err := s.db.BeginTx(ctx, opts)
	tm.Since(StageSQLBegin, start)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	start = time.Now()
	err = tx.Commit()
	tm.Since(StageSQLCommit, start)
	if err == nil {
		s.walCommitted()
	}
	return err
}
