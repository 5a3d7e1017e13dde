package benches

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/services/membus/internal/harness"
)

// The load run cannot rot: a tiny run answers with the JSON fields and no errors.
func TestBenchHTTP(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"bench", "http", "--clients", "4", "--duration", "1s", "--sync", "interval", "--json"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var line map[string]any
	if err := json.Unmarshal(out.Bytes(), &line); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	for _, k := range []string{"bench", "ops_per_sec", "p50_ms", "p99_ms", "error_rate", "status"} {
		if _, ok := line[k]; !ok {
			t.Errorf("no %q in %s", k, out.String())
		}
	}
	if line["error_rate"].(float64) != 0 {
		t.Errorf("errors in a tiny run: %s", out.String())
	}
}

// --url and --keys load a gateway that is already running: here an in-process membus standing in
// for `membus up` or the compose stack, its keys written to a file as `membus keys create
// --count` prints them.
func TestBenchHTTPAgainstARunningGateway(t *testing.T) {
	ctx := t.Context()
	env, closeEnv, err := openBenchEnv(ctx, "interval", harness.Backend{}, "target")
	if err != nil {
		t.Fatal(err)
	}
	defer closeEnv()
	var keys []string
	for i := range 3 {
		k, _, err := env.Store.CreateKey(ctx, "target", fmt.Sprintf("target-%d", i+1), store.RoleUser, "test")
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	file := filepath.Join(t.TempDir(), "keys.txt")
	if err := os.WriteFile(file, []byte(strings.Join(keys, "\n")+"\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	args := []string{"bench", "http", "--url", "http://" + env.Config.HTTPAddr + "/", "--keys", file, "--duration", "1s", "--json"}
	if code := run(args, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var line map[string]any
	if err := json.Unmarshal(out.Bytes(), &line); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if line["backend"] != "external" || line["size"].(float64) != 3 || line["error_rate"].(float64) != 0 || line["p50_ms"] == nil || line["rss_mb"] != nil || line["recall_p50_ms"] == nil || line["append_p99_ms"] == nil {
		t.Errorf("want 3 clients on the external gateway, requests, no errors and no RSS (not this process's): %s", out.String())
	}
}

func TestBenchHTTPKeysFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	three, empty := write("three", "k1\n k2 \n\nk3\n"), write("empty", "\n\n")
	tests := []struct {
		name, path   string
		clients      int
		clientsGiven bool
		want         []string
		err          string
	}{
		{name: "every key a client", path: three, clients: 200, want: []string{"k1", "k2", "k3"}},
		{name: "the first of them", path: three, clients: 2, clientsGiven: true, want: []string{"k1", "k2"}},
		{name: "too few for the clients", path: three, clients: 4, clientsGiven: true, err: "3 keys for 4 clients"},
		{name: "no key", path: empty, clients: 5, err: "membus keys create"},
		{name: "no file", path: filepath.Join(dir, "nope"), clients: 5, err: "--keys"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readKeys(tt.path, tt.clients, tt.clientsGiven)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
