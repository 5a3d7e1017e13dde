package bus

import (
	"errors"
	"strings"
	"testing"
)

func TestNewNames(t *testing.T) {
	tests := []struct {
		name    string
		prefix  string
		want    string
		wantErr bool
	}{
		{"empty prefix defaults to membus", "", "membus", false},
		{"lower-case token with - and _ is kept", "prod-eu_1", "prod-eu_1", false},
		{"upper case is refused", "Membus", "", true},
		{"a dot would make two tokens", "a.b", "", true},
		{"wildcards are refused", "a*", "", true},
		{"space is refused", "a b", "", true},
		{"over 32 characters is refused", strings.Repeat("a", 33), "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, err := NewNames(tc.prefix)
			if tc.wantErr {
				if !errors.Is(err, ErrInvalidPrefix) {
					t.Fatalf("NewNames(%q) err = %v, want ErrInvalidPrefix", tc.prefix, err)
				}
				return
			}
			if err != nil || n.Prefix != tc.want {
				t.Fatalf("NewNames(%q) = %q, %v; want %q", tc.prefix, n.Prefix, err, tc.want)
			}
		})
	}
}

func TestNamesBuildSubjects(t *testing.T) {
	def, _ := NewNames("")
	dash, _ := NewNames("prod-eu")
	long := strings.Repeat("s", 65)
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"stream name is upper-cased prefix and kind", def.Stream(StreamTurns), "MEMBUS_TURNS"},
		{"dash in prefix becomes underscore in stream names", dash.Stream(StreamDLQ), "PROD_EU_DLQ"},
		{"turns subject", def.Turns("acme", "s-1"), "membus.turns.acme.s-1"},
		{"commits subject", def.Commits("acme", "S_2"), "membus.commits.acme.S_2"},
		{"event subject", def.Event("archive_created", "acme", "s1"), "membus.events.archive_created.acme.s1"},
		{"session id with a dot is hashed", def.Turns("acme", "a.b"), "membus.turns.acme." + SessionToken("a.b")},
		{"dlq subject lower-cases the stream", def.DLQ(StreamTurns, "acme", "tok"), "membus.dlq.turns.acme.tok"},
		{"rpc op may contain dots", def.RPC("acme", "memories.list"), "membus.rpc.acme.memories.list"},
		{"metrics hashes an odd instance id", def.Metrics("recall", "host:1"), "membus.metrics.recall." + InstanceToken("host:1")},
		{"consumer name is prefix-service", dash.Consumer("ingest"), "prod-eu-ingest"},
		{"65-character session id is hashed to 64 hex", def.Turns("a", long), "membus.turns.a." + SessionToken(long)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Fatalf("got %q, want %q", tc.got, tc.want)
			}
		})
	}
}

func TestSessionToken(t *testing.T) {
	tests := []struct {
		name   string
		id     string
		hashed bool
	}{
		{"plain id is kept", "sess-01_AB", false},
		{"64 characters are kept", strings.Repeat("a", 64), false},
		{"65 characters are hashed", strings.Repeat("a", 65), true},
		{"empty id is hashed", "", true},
		{"dot is hashed", "a.b", true},
		{"colon (OpenClaw session keys) is hashed", "agent:main:1", true},
		{"wildcard is hashed", "a*", true},
		{"unicode is hashed", "séance", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := SessionToken(tc.id)
			if !tc.hashed {
				if got != tc.id {
					t.Fatalf("SessionToken(%q) = %q, want unchanged", tc.id, got)
				}
				return
			}
			if got == tc.id || len(got) != 64 || strings.Trim(got, "0123456789abcdef") != "" {
				t.Fatalf("SessionToken(%q) = %q, want 64 lower-case hex", tc.id, got)
			}
			if SessionToken(tc.id) != got {
				t.Fatal("not deterministic")
			}
			if InstanceToken(tc.id) != got {
				t.Fatal("InstanceToken differs from SessionToken")
			}
		})
	}
}

func TestValidAccount(t *testing.T) {
	tests := []struct {
		name string
		id   string
		ok   bool
	}{
		{"lower-case letters, digits, - and _", "acme-01_x", true},
		{"64 characters", strings.Repeat("a", 64), true},
		{"empty", "", false},
		{"65 characters", strings.Repeat("a", 65), false},
		{"upper case", "Acme", false},
		{"dot", "a.b", false},
		{"wildcard", "*", false},
		{"space", "a b", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidAccount(tc.id)
			if tc.ok != (err == nil) {
				t.Fatalf("ValidAccount(%q) = %v, want ok=%v", tc.id, err, tc.ok)
			}
			if err != nil && (!errors.Is(err, ErrInvalidAccount) || !strings.Contains(err.Error(), "[a-z0-9_-]")) {
				t.Fatalf("error %q does not name the rule", err)
			}
		})
	}
}

func TestMsgID(t *testing.T) {
	if MsgID("a", "bc") == MsgID("ab", "c") {
		t.Fatal("parts are not separated")
	}
	if first, again := MsgID("a", "b"), MsgID("a", "b"); first != again {
		t.Fatal("not deterministic")
	}
	if got := MsgID("x"); len(got) != 64 {
		t.Fatalf("MsgID length %d, want 64", len(got))
	}
}

func TestParse(t *testing.T) {
	n, _ := NewNames("membus")
	tests := []struct {
		name    string
		subject string
		want    Subject
		wantErr bool
	}{
		{"turns", "membus.turns.acme.s1", Subject{Category: "turns", Account: "acme", SessionToken: "s1"}, false},
		{"commits", "membus.commits.acme.s1", Subject{Category: "commits", Account: "acme", SessionToken: "s1"}, false},
		{"events carry the kind", "membus.events.memory_upserted.acme.s1", Subject{Category: "events", EventKind: "memory_upserted", Account: "acme", SessionToken: "s1"}, false},
		{"dlq carries the stream", "membus.dlq.turns.acme.s1", Subject{Category: "dlq", DLQStream: "turns", Account: "acme", SessionToken: "s1"}, false},
		{"round trip of a hashed session", n.Turns("acme", "x:y"), Subject{Category: "turns", Account: "acme", SessionToken: SessionToken("x:y")}, false},
		{"other prefix", "other.turns.acme.s1", Subject{}, true},
		{"upper-case account", "membus.turns.ACME.s1", Subject{}, true},
		{"missing session", "membus.turns.acme", Subject{}, true},
		{"extra token", "membus.turns.acme.s1.x", Subject{}, true},
		{"events without kind", "membus.events.acme.s1", Subject{}, true},
		{"unknown category", "membus.rpc.acme.recall", Subject{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := n.Parse(tc.subject)
			if tc.wantErr {
				if !errors.Is(err, ErrBadSubject) {
					t.Fatalf("Parse(%q) err = %v, want ErrBadSubject", tc.subject, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Parse(%q) = %+v, %v; want %+v", tc.subject, got, err, tc.want)
			}
			kind, acct, tok, err := n.ParseSubject(tc.subject)
			if err != nil || kind != tc.want.Category || acct != tc.want.Account || tok != tc.want.SessionToken {
				t.Fatalf("ParseSubject(%q) = %q %q %q %v", tc.subject, kind, acct, tok, err)
			}
		})
	}
}
