package store_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/testenv"
)

// A database that compares ids case-insensitively would make "A" and "a" one message id: the
// store refuses it at open and says how to create one it accepts.
func TestOpenMySQLRefusesACaseInsensitiveDatabase(t *testing.T) {
	dsn := testenv.MySQLDSN(t)
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "ALTER DATABASE `"+cfg.DBName+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"); err != nil {
		t.Fatal(err)
	}
	_, err = store.OpenMySQL(ctx, dsn)
	if !errors.Is(err, store.ErrCollation) || !strings.Contains(err.Error(), "COLLATE utf8mb4_bin") || !strings.Contains(err.Error(), "utf8mb4_general_ci") {
		t.Fatalf("OpenMySQL on a utf8mb4_general_ci database: err = %v, want ErrCollation naming it and utf8mb4_bin", err)
	}
	if _, err := db.ExecContext(ctx, "ALTER DATABASE `"+cfg.DBName+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		t.Fatal(err)
	}
	s, err := store.OpenMySQL(ctx, dsn)
	if err != nil {
		t.Fatalf("OpenMySQL on a utf8mb4_bin database: %v", err)
	}
	s.Close()
}
