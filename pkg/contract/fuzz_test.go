package contract_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/membus/membus/pkg/contract"
)

// busPayloads are the bodies membus decodes from the bus: the turn and commit streams, the
// events, and every RPC request (each service decodes with encoding/json, then Validate where
// the type has one).
var busPayloads = map[string]func() any{
	"turn_event":      func() any { return new(contract.TurnEvent) },
	"commit_request":  func() any { return new(contract.CommitRequest) },
	"event":           func() any { return new(contract.Event) },
	"commit_rpc":      func() any { return new(contract.CommitRPCRequest) },
	"recall":          func() any { return new(contract.RecallRequest) },
	"context":         func() any { return new(contract.ContextRequest) },
	"memories_list":   func() any { return new(contract.MemoriesListRequest) },
	"memory_get":      func() any { return new(contract.MemoryGetRequest) },
	"session_get":     func() any { return new(contract.SessionMetaRequest) },
	"archive_search":  func() any { return new(contract.ArchiveSearchRequest) },
	"archive_expand":  func() any { return new(contract.ArchiveExpandRequest) },
	"stats":           func() any { return new(contract.StatsRequest) },
	"erase":           func() any { return new(contract.EraseRequest) },
	"summary":         func() any { return new(contract.SummaryRequest) },
	"memories_import": func() any { return new(contract.MemoriesImportRequest) },
	"memory_record":   func() any { return new(contract.MemoryRecord) },
}

// FuzzBusPayloads feeds arbitrary bytes to every bus payload's decoder: nothing panics, and
// what a decoder accepts (valid UTF-8, decodes, validates) encodes again as valid UTF-8 JSON
// that decodes and validates the same way — an accepted payload is never one membus cannot
// write back to a stream or a reply.
func FuzzBusPayloads(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("..", "..", "schemas", "examples", "*", "valid", "*.json"))
	for _, p := range seeds {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{`{}`, `null`, `[]`, `{"v":1}`, `{"v":1,"messages":[{}]}`, "{\"v\":1,\"account_id\":\"\xff\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for name, mk := range busPayloads {
			v := mk()
			if json.Unmarshal(body, v) != nil || !utf8.Valid(body) || validate(v) != nil {
				continue
			}
			out, err := json.Marshal(v)
			if err != nil || !utf8.Valid(out) {
				t.Fatalf("%s: an accepted payload does not encode: %v", name, err)
			}
			again := mk()
			if err := json.Unmarshal(out, again); err != nil {
				t.Fatalf("%s: its own encoding does not decode: %v\n%s", name, err, out)
			}
			if err := validate(again); err != nil {
				t.Fatalf("%s: its own encoding does not validate: %v\n%s", name, err, out)
			}
		}
	})
}

func validate(v any) error {
	if x, ok := v.(interface{ Validate() error }); ok {
		return x.Validate()
	}
	return nil
}
