// Package testenv hands integration tests their real servers. Outside CI a test whose server
// is not configured skips, naming the variable that enables it; with CI=true it fails instead,
// so a CI run can never pass by skipping. It also holds the helpers tests of every module share:
// Eventually and Consistently, FilesHolding.
package testenv

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"
)

// Variables that enable the integration tests.
const (
	EnvMySQL      = "MEMBUS_TEST_MYSQL_DSN"
	EnvRedis      = "MEMBUS_TEST_REDIS_URL"
	EnvNATSServer = "MEMBUS_TEST_NATS_SERVER"
	EnvQdrant     = "MEMBUS_TEST_QDRANT_URL"
)

// InCI reports whether the tests run in CI (CI=true), where skipping a real server is a failure.
func InCI() bool { return os.Getenv("CI") == "true" || os.Getenv("CI") == "1" }

// Require returns the variable's value, or skips (outside CI) / fails (in CI) when it is empty.
func Require(t testing.TB, name, what string) string {
	t.Helper()
	v := os.Getenv(name)
	if v != "" {
		return v
	}
	if InCI() {
		t.Fatalf("%s is not set: CI must run the %s integration tests (scripts/services.sh prints it)", name, what)
	}
	t.Skipf("set %s to run this test against a real %s (scripts/services.sh starts one and prints it)", name, what)
	return ""
}

// MySQLDSN returns a DSN for a fresh database created for this test and dropped after it.
func MySQLDSN(t testing.TB) string {
	t.Helper()
	base := Require(t, EnvMySQL, "MariaDB/MySQL")
	cfg, err := mysql.ParseDSN(base)
	if err != nil {
		t.Fatalf("%s: %v", EnvMySQL, err)
	}
	admin := cfg.Clone()
	admin.DBName = ""
	db, err := sql.Open("mysql", admin.FormatDSN())
	if err != nil {
		t.Fatalf("open mysql: %v", err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	name := "membus_t_" + randHex(6)
	if _, err := db.ExecContext(ctx, "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		failOrSkip(t, EnvMySQL, fmt.Errorf("create database: %w", err))
	}
	t.Cleanup(func() {
		db, err := sql.Open("mysql", admin.FormatDSN())
		if err != nil {
			return
		}
		defer db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = db.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+name+"`")
	})
	cfg.DBName = name
	cfg.ParseTime = true
	return cfg.FormatDSN()
}

// RedisURL returns the Redis URL and a key prefix unique to this test; the test's keys are
// deleted after it.
func Redis(t testing.TB) (*redis.Client, string) {
	t.Helper()
	url := Require(t, EnvRedis, "Redis")
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("%s: %v", EnvRedis, err)
	}
	c := redis.NewClient(opt)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		failOrSkip(t, EnvRedis, fmt.Errorf("ping redis: %w", err))
	}
	prefix := "membus-test-" + randHex(6) + ":"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			c.Del(ctx, iter.Val())
		}
		c.Close()
	})
	return c, prefix
}

// RedisURLValue returns the configured Redis URL (skipping/failing like Redis).
func RedisURLValue(t testing.TB) string {
	t.Helper()
	return Require(t, EnvRedis, "Redis")
}

// NATS starts an in-process JetStream server in a temporary directory and returns a
// connection to it. The server stops when the test ends.
func NATS(t testing.TB) (*server.Server, *nats.Conn) {
	t.Helper()
	opts := &server.Options{
		Host:      "127.0.0.1",
		Port:      -1,
		JetStream: true,
		StoreDir:  t.TempDir(),
		NoLog:     true,
		NoSigs:    true,
	}
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatalf("nats server: %v", err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatalf("nats server not ready")
	}
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatalf("connect nats: %v", err)
	}
	t.Cleanup(func() {
		nc.Close()
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s, nc
}

// NATSServerBinary returns the path of a current standalone nats-server
// (scripts/nats-server.sh builds it and prints the variable).
func NATSServerBinary(t testing.TB) string {
	t.Helper()
	return Require(t, EnvNATSServer, "standalone nats-server")
}

// Qdrant returns the URL of a real Qdrant's gRPC endpoint (http://host:6334); the test
// creates its own collection there and drops it after. Unlike MariaDB and Redis, no Qdrant can
// run on the project's machines (no Docker, no binary in any reachable registry), so CI cannot
// provide one: the test skips without it, in CI too, and the adapter is verified against the
// fake server (pkg/vector/qdrant/qdranttest) there.
func Qdrant(t testing.TB) string {
	t.Helper()
	v := os.Getenv(EnvQdrant)
	if v == "" {
		t.Skipf("set %s to run this test against a real Qdrant (none can run on this machine; the fake covers CI)", EnvQdrant)
	}
	return v
}

func failOrSkip(t testing.TB, env string, err error) {
	t.Helper()
	if InCI() {
		t.Fatalf("%s: %v", env, err)
	}
	t.Skipf("%s is set but unusable (%v)", env, err)
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return strings.ToLower(hex.EncodeToString(b))
}

// Eventually calls check every interval until it returns nil, and fails the test with the last
// error once total has passed (nats.go's checkFor). It is the one way tests wait for something
// to happen: no hand-written deadline loops, no fixed sleeps.
func Eventually(t testing.TB, total, interval time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(total)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still failing after %s: %v", total, err)
		}
		time.Sleep(interval)
	}
}

// Consistently calls check every interval for the whole of total and fails the test the first
// time it returns an error. It is for the few claims that something does not happen — a second
// commit request, a wrong redelivery — which no event can confirm. It proves the absence for
// total only, so keep total a small multiple of the period of what could cause it (a sweep, an
// ack wait), and say in the caller which period that is. Named after Gomega's Consistently: the
// check describes the state that must hold, as Eventually's does.
func Consistently(t testing.TB, total, interval time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(total)
	for {
		if err := check(); err != nil {
			t.Fatalf("stopped holding: %v", err)
		}
		if !time.Now().Before(deadline) {
			return
		}
		time.Sleep(interval)
	}
}
