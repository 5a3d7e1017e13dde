package config

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the README's configuration table")

// TestREADMETable: the README's configuration table is generated from the keys' definitions;
// this fails when they differ (run with -update to regenerate it).
func TestREADMETable(t *testing.T) {
	path := filepath.Join("..", "..", "README.md")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	begin, end := strings.Index(readme, TableBegin), strings.Index(readme, TableEnd)
	if begin < 0 || end < begin {
		t.Fatalf("README.md lacks the markers of the configuration table:\n%s\n%s", TableBegin, TableEnd)
	}
	want := TableBegin + "\n" + MarkdownTable() + TableEnd
	got := readme[begin : end+len(TableEnd)]
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(readme[:begin]+want+readme[end+len(TableEnd):]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("README.md's configuration table differs from pkg/config's keys; run `go test ./pkg/config -run TestREADMETable -update` (from pkg: go test ./config -update).\nwant:\n%s", want)
}

func TestTableHasEveryKey(t *testing.T) {
	table := MarkdownTable()
	c := Defaults()
	for _, f := range c.fields() {
		if !strings.Contains(table, "`"+f.env()+"` | `--"+f.flag()+"`") {
			t.Errorf("no row for %s", f.key)
		}
	}
}
