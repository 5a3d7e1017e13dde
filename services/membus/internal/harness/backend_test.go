package harness

import (
	"errors"
	"testing"
)

func TestBackendFromEnv(t *testing.T) {
	env := map[string]string{"MEMBUS_MYSQL_DSN": "u:p@tcp(h)/db", "MEMBUS_REDIS_URL": "redis://h", "MEMBUS_QDRANT_URL": "http://q:6334"}
	rb, err := BackendFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if rb.QdrantURL != "http://q:6334" || rb.DSN == "" || rb.RedisURL == "" {
		t.Fatalf("backend %+v: want the DSN, Redis and Qdrant from the environment", rb)
	}
	if _, err := BackendFromEnv(func(string) string { return "" }); !errors.Is(err, ErrRealBackend) {
		t.Fatalf("no variables: err %v, want ErrRealBackend", err)
	}
}
