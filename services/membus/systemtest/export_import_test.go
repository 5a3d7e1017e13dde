package systemtest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
)

// readExport decodes a JSON Lines export.
func readExport(t *testing.T, path string) []contract.MemoryRecord {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []contract.MemoryRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r contract.MemoryRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: %v: %s", path, err, sc.Text())
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// restorable is what an import must restore of a record: everything but the owner, the id
// (derived for the new owner) and updated_at (the time of the import).
func restorable(rs []contract.MemoryRecord) []contract.MemoryRecord {
	out := make([]contract.MemoryRecord, 0, len(rs))
	for _, r := range rs {
		r.ID, r.AccountID, r.UserID, r.UpdatedAt = "", "", "", time.Time{}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Text != out[j].Text {
			return out[i].Text < out[j].Text
		}
		return out[i].Category < out[j].Category
	})
	return out
}

// TestExportImportRoundTrip: `membus export` of a user's extracted memories, imported into an
// empty account with `membus import`, gives the same memories (text, category, scope, slot,
// sources and times), which recall finds; a second import adds nothing; the Markdown export has
// a section per category and a bullet per memory with its source links; a malformed line is
// named and nothing is imported.
func TestExportImportRoundTrip(t *testing.T) {
	dir := t.TempDir()
	env, _ := startEmbedded(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	sessions := [][]string{
		{"I live in Boston and I have a dog named Max.", "Nice! Boston is a great city.", "I really love black coffee in the morning."},
		{"My sister Emma is a nurse.", "That is a demanding job.", "I am allergic to peanuts.", "Noted.", "I went to Lisbon on 3 May 2026."},
	}
	for i, texts := range sessions {
		session := fmt.Sprintf("s-%d", i+1)
		ev := turnEvent("acme", "alice", session, texts...)
		if _, err := bus.PublishJSON(ctx, env.JS, env.Names.Turns("acme", session), ev.EventID, ev); err != nil {
			t.Fatal(err)
		}
		var res contract.CommitResult
		if err := bus.Call(ctx, env.NC, env.Names.RPC("acme", "commit"), contract.CommitRPCRequest{V: 1, RequestID: "r-" + session, UserID: "alice",
			SessionID: session, Kind: "sync", Wait: true}, &res); err != nil {
			t.Fatal(err)
		}
		if res.Status != contract.StatusCompleted {
			t.Fatalf("commit %s = %+v", session, res)
		}
	}
	conn := []string{"--data-dir", dir, "--nats-url", env.NATSURL, "--nats-token", env.Config.NATSToken}
	cli := func(args ...string) string {
		t.Helper()
		stdout, stderr, code := runCLI(t, append(args, conn...)...)
		if code != 0 {
			t.Fatalf("membus %s: exit %d: %s", strings.Join(args, " "), code, stderr)
		}
		return stdout
	}

	exported := filepath.Join(dir, "alice.jsonl")
	cli("export", "--account", "acme", "--user", "alice", "--out", exported)
	orig := readExport(t, exported)
	if len(orig) < 4 {
		t.Fatalf("exported %d memories, want the extracted ones (at least 4)", len(orig))
	}

	t.Logf("exported %d memories of acme/alice", len(orig))
	out := cli("import", "--account", "globex", "--user", "alice2", exported)
	if want := fmt.Sprintf("%d created, 0 merged, 0 unchanged, 0 erased", len(orig)); !strings.Contains(out, want) {
		t.Errorf("first import printed %q, want %q", out, want)
	}
	copied := filepath.Join(dir, "alice2.jsonl")
	cli("export", "--account", "globex", "--user", "alice2", "--out", copied)
	restored := readExport(t, copied)
	if a, b := restorable(orig), restorable(restored); !reflect.DeepEqual(a, b) {
		t.Errorf("export → import → export changed the memories:\nexported: %+v\nrestored: %+v", a, b)
	}
	for _, r := range restored {
		if r.AccountID != "globex" || r.UserID != "alice2" {
			t.Errorf("restored %s belongs to %s/%s", r.ID, r.AccountID, r.UserID)
		}
	}

	out = cli("import", "--account", "globex", "--user", "alice2", exported)
	if want := fmt.Sprintf("0 created, 0 merged, %d unchanged", len(orig)); !strings.Contains(out, want) {
		t.Errorf("second import printed %q, want %q", out, want)
	}
	if again := readExport(t, exported); len(again) != len(orig) {
		t.Errorf("the source changed: %d memories, was %d", len(again), len(orig))
	}
	cli("export", "--account", "globex", "--user", "alice2", "--out", copied)
	if n := len(readExport(t, copied)); n != len(orig) {
		t.Errorf("after the second import globex/alice2 holds %d memories, want %d", n, len(orig))
	}

	// Recall sees the imported memories: they are in the vector index, not only in SQL.
	var rec contract.RecallResponse
	if err := bus.Call(ctx, env.NC, env.Names.RPC("globex", "recall"), contract.RecallRequest{V: 1, UserID: "alice2", Query: "Where does Caroline live?"}, &rec); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, it := range rec.Items {
		found = found || strings.Contains(it.Text, "Boston")
	}
	if !found || rec.Degraded {
		t.Errorf("recall in globex after the import = %+v (degraded %v), want the Boston memory", rec.Items, rec.Degraded)
	}

	md := cli("export", "--account", "acme", "--user", "alice", "--format", "markdown")
	cats := map[string]bool{}
	for _, r := range orig {
		cats[r.Category] = true
	}
	for c := range cats {
		if !regexp.MustCompile(`(?m)^## ` + strings.ToUpper(c[:1]) + c[1:] + ` \(\d+\)$`).MatchString(md) {
			t.Errorf("no section for category %s:\n%s", c, md)
		}
	}
	if n := len(regexp.MustCompile(`(?m)^- `).FindAllString(md, -1)); n != len(orig) {
		t.Errorf("%d bullets, want one per memory (%d):\n%s", n, len(orig), md)
	}
	if !strings.Contains(md, "(membus://acme/sessions/s-1/messages/s-1-m0)") {
		t.Errorf("no source link of s-1-m0:\n%s", md)
	}

	bad := filepath.Join(dir, "bad.jsonl")
	lines := strings.SplitN(readFile(t, exported), "\n", 2)
	if err := os.WriteFile(bad, []byte(lines[0]+"\n{\"v\":1, \"text\": \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI(t, append([]string{"import", "--account", "initech", "--user", "x", bad}, conn...)...)
	if code != 1 || !strings.Contains(stderr, "line 2") {
		t.Errorf("import of a malformed file: exit %d, stderr %q; want 1 naming line 2", code, stderr)
	}
	cli("export", "--account", "initech", "--user", "x", "--out", copied)
	if n := len(readExport(t, copied)); n != 0 {
		t.Errorf("a malformed file imported %d memories, want none", n)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
