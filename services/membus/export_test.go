package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/membus/membus/pkg/contract"
)

var update = flag.Bool("update", false, "rewrite testdata/export.golden.md")

const goodLine = `{"v":1,"id":"5d0c9a8e-3b7f-5e21-9a44-1c2d3e4f5a6b","account_id":"acme","user_id":"alice","scope":"user","category":"profile","polarity":1,"text":"Alice lives in Denver.","importance":0.8,"sources":[{"session_id":"s1","message_id":"m1"}],"valid_from":"2025-03-14T16:02:20Z","created_at":"2025-03-14T16:02:20Z","updated_at":"2025-03-14T16:02:20Z"}`

func TestReadRecords(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    int    // records read
		wantErr string // "" means no error
	}{
		{"one memory per line, blank lines skipped", goodLine + "\n\n" + goodLine + "\n", 2, ""},
		{"no trailing newline", goodLine, 1, ""},
		{"an empty file imports nothing", "", 0, ""},
		{"a line that is not JSON is named", goodLine + "\nnot json\n", 0, "line 2: not a JSON memory record"},
		{"a truncated line is named", goodLine + "\n" + goodLine[:40] + "\n", 0, "line 2"},
		{"a record without text is named", strings.Replace(goodLine, `"text":"Alice lives in Denver.",`, "", 1), 0, "line 1: invalid payload: text is required"},
		{"two values on one line", goodLine + " " + goodLine, 0, "line 1: more than one JSON value"},
		{"a wrongly typed field is named", strings.Replace(goodLine, `"polarity":1`, `"polarity":"yes"`, 1), 0, "line 1"},
		{"a line over the limit is named", goodLine + "\n" + strings.Repeat("x", maxImportLine+1), 0, "line 2: longer than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := readRecords(strings.NewReader(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || len(recs) != tc.want {
				t.Fatalf("%d records, %v; want %d", len(recs), err, tc.want)
			}
		})
	}
}

// TestImportBadFileNamesTheLineAndConnectsNowhere: the file is checked before membus is
// reached, so the error is the line's, not a connection failure.
func TestImportBadFileNamesTheLineAndConnectsNowhere(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.jsonl")
	if err := os.WriteFile(path, []byte(goodLine+"\n{\"v\":1,\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"import", "--account", "acme", "--user", "bob", path, "--data-dir", t.TempDir(), "--nats-listen", "127.0.0.1:1"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "bad.jsonl: line 2") {
		t.Errorf("exit %d, stderr %q; want 1 and the line", code, stderr.String())
	}
}

func TestExportImportUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"export needs the account and user", []string{"export", "--user", "alice"}, "--account and --user are required"},
		{"export names the formats", []string{"export", "--account", "acme", "--user", "alice", "--format", "csv"}, "jsonl or markdown"},
		{"import needs the account and user", []string{"import", "--account", "acme"}, "--account and --user are required"},
		{"import checks the account id", []string{"import", "--account", "Acme Corp", "--user", "bob"}, "--account"},
		{"import takes one file", []string{"import", "--account", "acme", "--user", "bob", "a", "b"}, "at most one FILE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tc.args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr.String(), tc.want)
			}
		})
	}
}

// TestExportMarkdown compares the Markdown export of a fixed set of records with
// testdata/export.golden.md (go test -run TestExportMarkdown -update rewrites it): sections in
// category order, bullets oldest first, event days, agents, escaped markup, source links.
func TestExportMarkdown(t *testing.T) {
	at := func(day int) time.Time { return time.Date(2026, 3, day, 9, 30, 0, 0, time.UTC) }
	ev := at(3)
	src := func(session, msg string) []contract.MemorySource {
		return []contract.MemorySource{{SessionID: session, MessageID: msg}}
	}
	recs := []contract.MemoryRecord{
		{V: 1, ID: "00000000-0000-5000-8000-000000000003", Scope: "user", Category: "preference", Text: "Alice loves *black* coffee_in the [morning].", Sources: src("s-1", "m-3"), CreatedAt: at(2)},
		{V: 1, ID: "00000000-0000-5000-8000-000000000001", Scope: "user", Category: "profile", Text: "Alice lives in Denver.", Sources: append(src("s-1", "m-1"), src("s 2", "m/9")...), CreatedAt: at(1)},
		{V: 1, ID: "00000000-0000-5000-8000-000000000004", Scope: "user", Category: "event", Text: "Alice went to Lisbon.\nShe loved it.", EventTime: &ev, Sources: src("s-2", "m-4"), CreatedAt: at(4)},
		{V: 1, ID: "00000000-0000-5000-8000-000000000002", Scope: "user", Category: "profile", Text: "Alice has a dog named Max.", Sources: src("s-1", "m-2"), CreatedAt: at(1)},
		{V: 1, ID: "00000000-0000-5000-8000-000000000005", Scope: "agent", AgentID: "main", Category: "pattern", Text: "Answer Alice in Portuguese.", Sources: src("s-2", "m-5"), CreatedAt: at(5)},
	}
	var buf bytes.Buffer
	if err := writeMarkdown(&buf, "acme", "alice", recs, time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "export.golden.md")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("Markdown export differs from %s:\n%s", golden, buf.String())
	}
}
