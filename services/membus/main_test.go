package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// commandPaths lists every command of the tree (cobra's help and completion included), as the
// arguments that run it.
func commandPaths() ([][]string, []*cobra.Command) {
	root := newRoot()
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	var out [][]string
	var cmds []*cobra.Command
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		out, cmds = append(out, path), append(cmds, c)
		for _, sub := range c.Commands() {
			walk(sub, append(append([]string(nil), path...), sub.Name()))
		}
	}
	walk(root, nil)
	return out, cmds
}

// TestEveryCommandHelp: `membus <command> --help` exits 0 for every command, prints its own
// flags, and the configuration flags once, under their heading, after the command's own.
func TestEveryCommandHelp(t *testing.T) {
	paths, cmds := commandPaths()
	if len(paths) < 25 {
		t.Fatalf("only %d commands found", len(paths))
	}
	for i, path := range paths {
		t.Run("membus "+strings.Join(path, " "), func(t *testing.T) {
			t.Setenv("MEMBUS_DATA_DIR", t.TempDir()+"/missing") // help needs no data dir
			var stdout, stderr bytes.Buffer
			if code := run(append(path, "--help"), &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d, want 0; stderr:\n%s", code, stderr.String())
			}
			help := stdout.String()
			if stderr.Len() != 0 || !strings.Contains(help, "Usage:") {
				t.Fatalf("stderr %q, stdout:\n%s", stderr.String(), help)
			}
			cmds[i].LocalFlags().VisitAll(func(f *pflag.Flag) {
				// The name ends at a space or the line's end: --extraction is not --extraction-bounds.
				line := regexp.MustCompile(`(?m)^\s+(-\w, )?--` + regexp.QuoteMeta(f.Name) + `(\s|$)`)
				if n := len(line.FindAllString(help, -1)); n != 1 {
					t.Errorf("--%s appears %d times in the help, want once:\n%s", f.Name, n, help)
				}
			})
			heading := "Configuration flags"
			switch n := strings.Count(help, heading); {
			case n > 1:
				t.Errorf("%q appears %d times", heading, n)
			case n == 1 && strings.Index(help, heading) < strings.LastIndex(help, "\nFlags:"):
				t.Errorf("configuration flags come before the command's own flags:\n%s", help)
			}
		})
	}
}

func TestToolsShowOnlyTheirConfigurationFlags(t *testing.T) {
	for _, tc := range []struct {
		path      []string
		want, not string
	}{
		{[]string{"keys", "revoke"}, "--data-dir", "--llm-api-key"},
		{[]string{"dlq", "ls"}, "--nats-url", "--llm-api-key"},
		{[]string{"tail", "metrics"}, "--nats-token", "--keep-recent"},
		{[]string{"up"}, "--llm-api-key", "--filter"},
		{[]string{"ingest"}, "--idle-commit", "--account"},
	} {
		var stdout, stderr bytes.Buffer
		run(append(tc.path, "--help"), &stdout, &stderr)
		if !strings.Contains(stdout.String(), tc.want) || strings.Contains(stdout.String(), tc.not) {
			t.Errorf("membus %s --help: want %s and not %s:\n%s", strings.Join(tc.path, " "), tc.want, tc.not, stdout.String())
		}
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown command suggests the right one", []string{"dql"}, "dlq"},
		{"unknown flag points at --help", []string{"keys", "list", "--acount", "x"}, "membus keys list --help"},
		{"missing argument is named", []string{"keys", "revoke"}, "ID"},
		{"bad sequence number names the fix", []string{"dlq", "show", "abc"}, "membus dlq ls"},
		{"bad configuration names the key", []string{"config", "print", "--nats-sync", "never"}, "MEMBUS_NATS_SYNC / --nats-sync"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tc.args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr.String(), tc.want)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"version", "--json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var b buildInfo
	if err := json.Unmarshal(stdout.Bytes(), &b); err != nil || b.Version == "" || !strings.HasPrefix(b.Go, "go1.") {
		t.Errorf("version --json = %s (%v), want a version and the Go version", stdout.String(), err)
	}
	stdout.Reset()
	if code := run([]string{"--version"}, &stdout, &stderr); code != 0 || !strings.HasPrefix(stdout.String(), "membus ") {
		t.Errorf("--version: exit %d, %q", code, stdout.String())
	}
}

func TestKeysListJSONEmptyIsAnArray(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"keys", "create", "--account", "acme", "--user", "u", "--data-dir", dir}, &stdout, &stderr); code != 0 {
		t.Fatalf("keys create: exit %d: %s", code, stderr.String())
	}
	stdout.Reset()
	if code := run([]string{"keys", "list", "--account", "nobody", "--json", "--data-dir", dir}, &stdout, &stderr); code != 0 {
		t.Fatalf("keys list: exit %d: %s", code, stderr.String())
	}
	if got := strings.TrimSpace(stdout.String()); got != "[]" {
		t.Errorf("keys list --json of no keys = %q, want []", got)
	}
}

// --count makes one key per user <user>-1 … <user>-N, one per line (what bench http --keys reads).
func TestKeysCreateCount(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"keys", "create", "--account", "load", "--user", "load", "--count", "3", "--data-dir", dir}, &stdout, &stderr); code != 0 {
		t.Fatalf("keys create --count 3: exit %d: %s", code, stderr.String())
	}
	if keys := strings.Fields(stdout.String()); len(keys) != 3 || keys[0] == keys[1] {
		t.Fatalf("keys create --count 3 printed %q, want three different keys", stdout.String())
	}
	stdout.Reset()
	if code := run([]string{"keys", "list", "--account", "load", "--json", "--data-dir", dir}, &stdout, &stderr); code != 0 {
		t.Fatalf("keys list: exit %d: %s", code, stderr.String())
	}
	var listed []keyJSON
	if err := json.Unmarshal(stdout.Bytes(), &listed); err != nil {
		t.Fatal(err)
	}
	var users []string
	for _, k := range listed {
		users = append(users, k.UserID)
	}
	slices.Sort(users)
	if want := []string{"load-1", "load-2", "load-3"}; !slices.Equal(users, want) {
		t.Errorf("users %v, want %v", users, want)
	}
	stderr.Reset()
	if code := run([]string{"keys", "create", "--account", "load", "--user", "load", "--count", "0", "--data-dir", dir}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "--count") {
		t.Errorf("--count 0: exit %d, %q; want a usage error naming --count", code, stderr.String())
	}
}
