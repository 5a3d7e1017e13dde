package eval

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestEvalLocomoDataDir: a first run with --data-dir ingests and writes the manifest, a second
// reuses the data (no ingest: no ingest bar, the reuse note, the same messages stored) and
// prints the same figures; a data dir of other inputs is refused with what differs.
func TestEvalLocomoDataDir(t *testing.T) {
	tiny := filepath.Join("testdata", "locomo-tiny.json")
	dir := filepath.Join(t.TempDir(), "dd") // missing: the first run creates it
	args := func(data, embedder string, extra ...string) []string {
		return append([]string{"eval", "locomo", "--data", data, "--embedder", embedder, "--data-dir", dir, "--progress", "--json"}, extra...)
	}
	stored := regexp.MustCompile(`(\d+) messages stored`)
	runOK := func(t *testing.T) (stdout, stderr, messages string) {
		t.Helper()
		var out, errb bytes.Buffer
		if code := run(args(tiny, "hash", "--baseline", "bm25"), &out, &errb); code != 0 {
			t.Fatalf("code %d, stderr:\n%s", code, errb.String())
		}
		m := stored.FindStringSubmatch(errb.String())
		if m == nil {
			t.Fatalf("no stored message count in stderr:\n%s", errb.String())
		}
		return out.String(), errb.String(), m[1]
	}

	out1, err1, n1 := runOK(t)
	if !strings.Contains(err1, "ingested and committed 9 turns") || !strings.Contains(err1, "ingest [") {
		t.Fatalf("first run did not ingest:\n%s", err1)
	}
	b, err := os.ReadFile(filepath.Join(dir, dataManifestName))
	if err != nil {
		t.Fatalf("first run left no manifest: %v", err)
	}
	var man dataManifest
	if err := json.Unmarshal(b, &man); err != nil {
		t.Fatal(err)
	}
	sum, err := fileSHA256(tiny)
	if err != nil {
		t.Fatal(err)
	}
	if man.Eval != "locomo" || man.DataSHA256 != sum || man.Embedder != "hash" || !strings.HasPrefix(man.Model, "hash") ||
		man.Conversations != 1 || man.Turns != 9 || man.Version == "" || man.Ingested.IsZero() {
		t.Fatalf("manifest %+v, want locomo, sha256 %s, hash, 1 conversation of 9 turns, a version and a time", man, sum)
	}
	if n1 != "9" {
		t.Errorf("first run stored %s messages, want the 9 turns", n1)
	}

	out2, err2, n2 := runOK(t)
	if strings.Contains(err2, "ingest [") || strings.Contains(err2, "ingested and committed") || !strings.Contains(err2, "reused the ingest in "+dir) {
		t.Fatalf("second run ingested:\n%s", err2)
	}
	if n2 != n1 {
		t.Errorf("second run: %s messages stored, first %s", n2, n1)
	}
	if out2 != out1 {
		t.Fatalf("figures differ on the same data:\nfirst:\n%s\nsecond:\n%s", out1, out2)
	}
	if !strings.Contains(out1, `"system":"membus"`) || !strings.Contains(out1, `"system":"bm25"`) {
		t.Fatalf("want membus and bm25 lines:\n%s", out1)
	}

	// --mmr changes recall only: it reuses the ingest, and its membus lines say so.
	var out3, err3 bytes.Buffer
	if code := run(args(tiny, "hash", "--mmr"), &out3, &err3); code != 0 {
		t.Fatalf("--mmr: code %d, stderr:\n%s", code, err3.String())
	}
	if !strings.Contains(err3.String(), "reused the ingest in "+dir) || !strings.Contains(out3.String(), `"config":"mmr"`) ||
		strings.Contains(out1, `"config":"mmr"`) {
		t.Fatalf("--mmr run: want the ingest reused and config mmr (only there):\nstdout %s\nstderr %s", out3.String(), err3.String())
	}

	other := filepath.Join(t.TempDir(), "other.json")
	tinyBytes, err := os.ReadFile(tiny)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, append(tinyBytes, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	manPath := filepath.Join(dir, dataManifestName)
	tests := []struct {
		name  string
		args  []string
		setup func(t *testing.T) // changes the dir; the test restores the manifest after
		code  int
		want  []string
	}{
		{"other data file", args(other, "hash"), nil, 1, []string{"data sha256 " + sum, "remove the dir", "another --data-dir"}},
		{"other embedder", args(tiny, "onnx"), nil, 1, []string{"embedder hash, this run onnx", "remove the dir"}},
		{"other model", args(tiny, "hash"), func(t *testing.T) {
			m := man
			m.Model = "hash-v0"
			if err := writeDataManifest(dir, m); err != nil {
				t.Fatal(err)
			}
		}, 1, []string{"model hash-v0, this run " + man.Model}},
		{"no manifest", args(tiny, "hash"), func(t *testing.T) {
			if err := os.Remove(manPath); err != nil {
				t.Fatal(err)
			}
		}, 1, []string{"holds no " + dataManifestName, "remove it"}},
		{"extraction", args(tiny, "hash", "--extraction"), nil, 2, []string{"neither --extraction"}},
		{"real backend", args(tiny, "hash", "--backend", "real"), nil, 2, []string{"nor --backend real"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup(t)
			}
			defer func() {
				if err := os.WriteFile(manPath, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}()
			var out, errb bytes.Buffer
			code := run(tc.args, &out, &errb)
			if code != tc.code {
				t.Fatalf("code %d, want %d; stderr:\n%s", code, tc.code, errb.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(errb.String(), w) {
					t.Errorf("stderr %q, want %q", errb.String(), w)
				}
			}
			if strings.Contains(errb.String(), "ingest [") || out.Len() != 0 {
				t.Errorf("a refused run ingested or printed figures:\nstdout %s\nstderr %s", out.String(), errb.String())
			}
		})
	}
}
