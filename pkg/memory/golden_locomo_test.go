//go:build extractgolden

package memory_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/membus/membus/pkg/memory"
)

// The extractor's every output over LoCoMo's conversations (each session extracted twice, each
// speaker once the user), with ResolveTime and ResolveSpeaker over every sentence, against a
// golden file: a performance change must not change one byte. A tool for such a change, not a
// CI test (LoCoMo lives outside the repository): record the golden with the code before the
// change, then compare after it:
//
//	MEMBUS_LOCOMO=../shared/data/locomo/locomo-dev.json MEMBUS_EXTRACT_GOLDEN=/tmp/golden.jsonl \
//	  go test -tags extractgolden -run TestExtractGoldenLoCoMo ./memory/
func TestExtractGoldenLoCoMo(t *testing.T) {
	data, golden := os.Getenv("MEMBUS_LOCOMO"), os.Getenv("MEMBUS_EXTRACT_GOLDEN")
	if data == "" || golden == "" {
		t.Fatal("set MEMBUS_LOCOMO (the LoCoMo JSON file) and MEMBUS_EXTRACT_GOLDEN (the golden file to write, then to compare with)")
	}
	raw, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	var convs []struct {
		Conversation map[string]json.RawMessage `json:"conversation"`
	}
	if err := json.Unmarshal(raw, &convs); err != nil {
		t.Fatal(err)
	}
	h := memory.NewHeuristic()
	at := time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC)
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	for ci, c := range convs {
		var a string
		_ = json.Unmarshal(c.Conversation["speaker_a"], &a)
		for si := 1; ; si++ {
			rawSession, ok := c.Conversation[fmt.Sprintf("session_%d", si)]
			if !ok {
				break
			}
			var turns []struct {
				Speaker string `json:"speaker"`
				DiaID   string `json:"dia_id"`
				Text    string `json:"text"`
			}
			if err := json.Unmarshal(rawSession, &turns); err != nil {
				t.Fatal(err)
			}
			for _, userIsA := range []bool{true, false} {
				msgs := make([]memory.Message, len(turns))
				for i, tu := range turns {
					role := "assistant"
					if (tu.Speaker == a) == userIsA {
						role = "user"
					}
					name := tu.Speaker
					if i%3 == 2 {
						name = "" // the speaker learned from "my name is"
					}
					msgs[i] = memory.Message{ID: tu.DiaID, Role: role, Name: name, Text: tu.Text, CreatedAt: at.Add(time.Duration(ci*1000+si*24+i) * time.Hour)}
				}
				cs, err := h.Extract(context.Background(), msgs)
				if err != nil {
					t.Fatal(err)
				}
				if err := enc.Encode(cs); err != nil {
					t.Fatal(err)
				}
			}
			for i, tu := range turns {
				for _, s := range memory.Sentences(tu.Text) {
					when, ok := memory.ResolveTime(s, at.Add(time.Duration(i)*time.Hour))
					_ = enc.Encode([]any{s, when, ok, memory.ResolveSpeaker(s, tu.Speaker)})
				}
			}
		}
	}
	want, err := os.ReadFile(golden)
	if os.IsNotExist(err) {
		if err := os.WriteFile(golden, out.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Skipf("recorded %s (%d bytes): run again after the change to compare", golden, out.Len())
	}
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(want, out.Bytes()) {
		_ = os.WriteFile(golden+".got", out.Bytes(), 0o600)
		t.Fatalf("extraction differs from %s (got in %s.got)", golden, golden)
	}
}
