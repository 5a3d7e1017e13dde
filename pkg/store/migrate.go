package store

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/membus/membus/schemas"
)

type migration struct {
	version int
	name    string
	sql     string
}

func loadMigrations(dialect string) ([]migration, error) {
	dir := path.Join("sql", dialect)
	entries, err := fs.ReadDir(schemas.SQL, dir)
	if err != nil {
		return nil, fmt.Errorf("read migrations %s: %w", dir, err)
	}
	var out []migration
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: name must be NNN_name.sql", e.Name())
		}
		b, err := fs.ReadFile(schemas.SQL, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

// migrate applies the pending migrations. Several replicas may start at once: on MySQL a
// named lock (GET_LOCK) serialises them, on SQLite an immediate transaction does; each
// migration is recorded in schema_migrations and statements are idempotent (IF NOT EXISTS).
func (s *Store) migrate(ctx context.Context) error {
	ms, err := loadMigrations(s.dialect)
	if err != nil {
		return err
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer conn.Close()

	if s.dialect == MySQL {
		var got sql.NullInt64
		if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK('membus_migrate', 120)").Scan(&got); err != nil {
			return fmt.Errorf("migrate: take lock: %w", err)
		}
		if !got.Valid || got.Int64 != 1 {
			return fmt.Errorf("migrate: another replica held the migration lock for 120 s")
		}
		// GET_LOCK is held by the connection: closing it releases the lock even if this fails.
		defer func() { _, _ = conn.ExecContext(context.WithoutCancel(ctx), "SELECT RELEASE_LOCK('membus_migrate')") }()
	}
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INT NOT NULL PRIMARY KEY, name VARCHAR(255) NOT NULL, applied_us BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for _, m := range ms {
		if err := s.applyMigration(ctx, conn, m); err != nil {
			return fmt.Errorf("migrate %s: %w", m.name, err)
		}
	}
	return nil
}

func (s *Store) applyMigration(ctx context.Context, conn *sql.Conn, m migration) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM schema_migrations WHERE version = ?", m.version).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	for _, stmt := range splitStatements(m.sql) {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("%w\n%s", err, stmt)
		}
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO schema_migrations (version, name, applied_us) VALUES (?, ?, ?)",
		m.version, m.name, s.nowUS()); err != nil {
		return err
	}
	return tx.Commit()
}

// splitStatements splits a migration on ';' at line ends, dropping comment-only chunks.
func splitStatements(src string) []string {
	var out []string
	for _, chunk := range strings.Split(src, ";\n") {
		var lines []string
		for _, l := range strings.Split(chunk, "\n") {
			if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "--") {
				lines = append(lines, l)
			}
		}
		stmt := strings.TrimSuffix(strings.TrimSpace(strings.Join(lines, "\n")), ";")
		if stmt != "" {
			out = append(out, stmt)
		}
	}
	return out
}
