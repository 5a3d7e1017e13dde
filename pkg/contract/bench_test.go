package contract_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/membus/membus/pkg/contract"
)

// Every turn ingest consumes is decoded and validated once: a regression here is a regression of
// ingest's per-message cost (membus bench ingest's "decode" stage).
func BenchmarkTurnEventDecode(b *testing.B) {
	e := validTurn()
	e.Messages = nil
	for i := range 4 {
		m := validTurn().Messages[0]
		m.MessageID, m.Position = fmt.Sprintf("m-%d", i), i
		m.Parts = []contract.Part{{Type: contract.PartText, Text: "I moved to Denver last month, and the new job at the hospital starts on Monday. " +
			"My sister Marta is visiting in June; we plan a hike in the Rockies."}}
		e.Messages = append(e.Messages, m)
	}
	raw, err := json.Marshal(e)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		var got contract.TurnEvent
		if err := json.Unmarshal(raw, &got); err != nil {
			b.Fatal(err)
		}
		if err := got.Validate(); err != nil {
			b.Fatal(err)
		}
	}
}
