package contract

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

func sum(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }

func TestOpenClawSessionID(t *testing.T) {
	cases := []struct {
		name, id, key, want string
	}{
		{"upper-case UUID is lower-cased", "3F2504E0-4F89-11D3-9A0C-0305E82C3301", "agent:main:x", "3f2504e0-4f89-11d3-9a0c-0305e82c3301"},
		{"lower-case UUID is kept", "3f2504e0-4f89-11d3-9a0c-0305e82c3301", "", "3f2504e0-4f89-11d3-9a0c-0305e82c3301"},
		{"a session key wins over a non-UUID id", "chat-42", "agent:main:telegram:42", sum("agent:main:telegram:42")},
		{"Windows-illegal characters are hashed with the prefix", `C:\chats|a?`, "", sum(`openclaw-session:C:\chats|a?`)},
		{"a colon alone is illegal", "telegram:42", "", sum("openclaw-session:telegram:42")},
		{"a plain id is kept", "chat-42_b", "", "chat-42_b"},
		{"a UUID-like id with a missing group is not a UUID", "3F2504E0-4F89-11D3-9A0C", "", "3F2504E0-4F89-11D3-9A0C"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := OpenClawSessionID(c.id, c.key); got != c.want {
				t.Fatalf("OpenClawSessionID(%q, %q) = %q, want %q", c.id, c.key, got, c.want)
			}
		})
	}
}

func TestOpenClawAgentID(t *testing.T) {
	cases := []struct {
		name, key, runtime, prefix, want string
	}{
		{"agent:<id>:<rest> key gives the id", "agent:coder:telegram:1", "main", "", "coder"},
		{"the runtime id without such a key", "telegram:1", "writer", "", "writer"},
		{"main when nothing is known", "", "", "", "main"},
		{"the prefix is prepended", "agent:coder:x", "", "acme", "acme_coder"},
		{"unsafe characters are replaced", "agent:c.o der:x", "", "", "c_o_der"},
		{"a key that only looks similar is ignored", "agents:coder:x", "rt", "", "rt"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := OpenClawAgentID(c.key, c.runtime, c.prefix); got != c.want {
				t.Fatalf("OpenClawAgentID(%q, %q, %q) = %q, want %q", c.key, c.runtime, c.prefix, got, c.want)
			}
		})
	}
}
