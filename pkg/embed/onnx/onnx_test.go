package onnx

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/membus/membus/pkg/embed"
	"github.com/membus/membus/pkg/testenv"
)

// modelDir returns MEMBUS_MODEL_DIR, or the repository's data/models that `make model`
// fills. Without the model the test skips outside CI and fails in CI (.ci/run runs
// `make model` first).
func modelDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("MEMBUS_MODEL_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "data", "models")
	}
	if Present(dir) {
		return dir
	}
	if testenv.InCI() {
		t.Fatalf("no ONNX model in %s: CI must run `make model` before the tests (or set MEMBUS_MODEL_DIR)", dir)
	}
	t.Skipf("no ONNX model in %s: run `make model` (or set MEMBUS_MODEL_DIR) to run the model tests", dir)
	return ""
}

func openModel(t testing.TB, opts ...Option) *Embedder {
	t.Helper()
	e, err := New(modelDir(t), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// optInModelDir returns the directory of one model of scripts/model.sh: the one the env var
// names, else the repository's data/models-<id> (where .ci/run puts the models other than the
// default), else modelDir's directory (MEMBUS_MODEL_DIR or data/models) when it holds that
// model. Without it the test skips outside CI and fails in CI.
func optInModelDir(t testing.TB, env, id string) string {
	t.Helper()
	dir := os.Getenv(env)
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "data", "models-"+id)
		def := os.Getenv("MEMBUS_MODEL_DIR")
		if def == "" {
			def = filepath.Join("..", "..", "..", "data", "models")
		}
		if m, _ := DirModel(def); !Present(dir) && m == "onnx:"+id {
			dir = def
		}
	}
	if !Present(dir) {
		why := fmt.Sprintf("no %s model in %s: `MEMBUS_MODEL=%s MEMBUS_MODEL_DIR=%s make model` (or %s=DIR) runs this test", id, dir, id, dir, env)
		if testenv.InCI() {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	return dir
}

func TestNewONNXMissingModel(t *testing.T) {
	_, err := New(t.TempDir())
	if !errors.Is(err, ErrNoModel) {
		t.Fatalf("New(empty dir) = %v, want ErrNoModel", err)
	}
}

// writeModelDir writes files (name: body) into a new directory named m.
func writeModelDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "m")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestReadModelConfig(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  modelConfig
		err   bool
	}{
		{"defaults: dir name, uncased, mean", nil, modelConfig{id: "m", lowercase: true}, false},
		{"sentence-transformers files", map[string]string{
			"model_id":                  "all-MiniLM-L6-v2-int8\n",
			"tokenizer_config.json":     `{"do_lower_case": true}`,
			"sentence_bert_config.json": `{"max_seq_length": 256, "do_lower_case": false}`,
			"pooling_config.json":       `{"pooling_mode_cls_token": false, "pooling_mode_mean_tokens": true}`,
		}, modelConfig{id: "all-MiniLM-L6-v2-int8", maxLen: 256, lowercase: true}, false},
		{"cased CLS model (bge-style)", map[string]string{
			"tokenizer_config.json": `{"do_lower_case": false}`,
			"pooling_config.json":   `{"pooling_mode_cls_token": true}`,
		}, modelConfig{id: "m", cls: true}, false},
		{"e5-style prompts: query and passage", map[string]string{
			"config_sentence_transformers.json": `{"prompts": {"query": "query: ", "passage": "passage: "}}`,
		}, modelConfig{id: "m", lowercase: true, queryPrompt: "query: ", docPrompt: "passage: "}, false},
		{"bge-style prompts: a query instruction, documents as they are", map[string]string{
			"config_sentence_transformers.json": `{"prompts": {"query": "Represent: ", "document": ""}, "default_prompt_name": null}`,
			"pooling_config.json":               `{"pooling_mode_cls_token": true}`,
		}, modelConfig{id: "m", lowercase: true, cls: true, queryPrompt: "Represent: "}, false},
		{"membus_scale.json", map[string]string{"membus_scale.json": `{"cosine_shift": 0.711, "cosine_scale": 4.24}`},
			modelConfig{id: "m", lowercase: true, cosShift: 0.711, cosScale: 4.24}, false},
		{"membus_scale.json with a near-duplicate cosine", map[string]string{"membus_scale.json": `{"cosine_shift": 0.711, "cosine_scale": 4.24, "duplicate_cosine": 0.95}`},
			modelConfig{id: "m", lowercase: true, cosShift: 0.711, cosScale: 4.24, dupCos: 0.95}, false},
		{"a near-duplicate cosine over 1 is refused", map[string]string{"membus_scale.json": `{"duplicate_cosine": 1.5}`}, modelConfig{}, true},
		{"a negative cosine scale is refused", map[string]string{"membus_scale.json": `{"cosine_scale": -1}`}, modelConfig{}, true},
		{"max pooling is refused", map[string]string{"pooling_config.json": `{"pooling_mode_max_tokens": true}`}, modelConfig{}, true},
		{"bad json", map[string]string{"tokenizer_config.json": `{`}, modelConfig{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeModelDir(t, tt.files)
			got, err := readModelConfig(dir)
			if tt.err {
				if err == nil {
					t.Fatalf("readModelConfig = %+v, want an error", got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("readModelConfig = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// TestONNXModel: `make model` (data/models) holds the default model, and every model of
// scripts/model.sh loads with 384 dimensions and at most 256 tokens.
func TestONNXModel(t *testing.T) {
	for _, m := range []struct {
		name, id string
		open     func(testing.TB, ...Option) *Embedder
	}{{"default", DefaultModel, openModel}, {"all-MiniLM-L6-v2-int8", "all-MiniLM-L6-v2-int8", openMiniLM}} {
		t.Run(m.name, func(t *testing.T) {
			e := m.open(t)
			if e.Dim() != 384 || e.Model() != "onnx:"+m.id || e.MaxLen() != 256 {
				t.Fatalf("Dim, Model, MaxLen = %d, %s, %d; want 384, onnx:%s, 256", e.Dim(), e.Model(), e.MaxLen(), m.id)
			}
			var _ embed.Embedder = e
		})
	}
}

// TestDefaultModelIsScriptsDefault: DefaultModel names the model scripts/model.sh fetches into
// an empty directory.
func TestDefaultModelIsScriptsDefault(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "scripts", "model.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "\ndefault_model=" + DefaultModel + "\n"; !strings.Contains(string(b), want) {
		t.Fatalf("scripts/model.sh has no line %q: DefaultModel and the script disagree", strings.TrimSpace(want))
	}
}

// openMiniLM opens all-MiniLM-L6-v2-int8, the default model before e5-small-v2-int8 (data
// dirs embedded with it keep it), from MEMBUS_TEST_MINILM_MODEL_DIR or data/models-<id>.
func openMiniLM(t testing.TB, opts ...Option) *Embedder {
	t.Helper()
	e, err := New(optInModelDir(t, "MEMBUS_TEST_MINILM_MODEL_DIR", "all-MiniLM-L6-v2-int8"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// TestONNXGolden compares with ONNX Runtime's Python binding on all-MiniLM-L6-v2-int8 and the
// Hugging Face tokenizer (first 8 dimensions of the mean-pooled, normalised vector).
func TestONNXGolden(t *testing.T) {
	e := openMiniLM(t)
	tests := []struct {
		text string
		ids  []int64
		head []float32
	}{
		{"My favourite hobby is trekking in the mountains.",
			[]int64{101, 2026, 8837, 17792, 2003, 10313, 6834, 1999, 1996, 4020, 1012, 102},
			[]float32{-0.02853, 0.0299, 0.07497, 0.05512, -0.01256, -0.05987, 0.10542, -0.03622}},
		{"Café naïve résumé — don't!",
			[]int64{101, 7668, 15743, 13746, 1517, 2123, 1005, 1056, 999, 102},
			[]float32{-0.02831, 0.00935, 0.04608, 0.03352, 0.06964, 0.05307, -0.02513, -0.04212}},
	}
	texts := make([]string, len(tests))
	for i, tt := range tests {
		texts[i] = tt.text
		if got := e.tok.Encode(tt.text, e.MaxLen()); !slices.Equal(got, tt.ids) {
			t.Errorf("Encode(%q) = %v, want %v", tt.text, got, tt.ids)
		}
	}
	vecs, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, tt := range tests {
		for k, want := range tt.head {
			if d := math.Abs(float64(vecs[i][k] - want)); d > 2e-4 {
				t.Errorf("%q dim %d = %.5f, want %.5f", tt.text, k, vecs[i][k], want)
			}
		}
	}
}

// TestONNXBatchingIsPaddingFree: a text's vector does not depend on the batch it runs
// in, nor on how long its batch mates are (padding is masked out). all-MiniLM-L6-v2's export
// runs in float, so batched and alone agree to 0.9999; e5-small-v2's (the default) quantises
// its activations per batch (DynamicQuantizeLinear before each MatMulInteger), so a text's
// vector moves a little with its batch mates' range: 0.9969-0.9982 measured, 0.995 asked.
func TestONNXBatchingIsPaddingFree(t *testing.T) {
	for _, m := range []struct {
		name string
		open func(testing.TB, ...Option) *Embedder
		min  float64
	}{{"default", openModel, 0.995}, {"all-MiniLM-L6-v2-int8", openMiniLM, 0.9999}} {
		t.Run(m.name, func(t *testing.T) { checkBatching(t, m.open(t, WithBatch(3)), m.min) })
	}
}

func checkBatching(t *testing.T, e *Embedder, minCos float64) {
	texts := []string{
		"short",
		"A considerably longer sentence about the weather in the mountains during the late autumn months of the year.",
		"Do I like hiking?",
		"",
		"The invoice is due on Friday.",
		"short",
		"Another one, to make a second batch.",
	}
	all, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		one, err := e.Embed(context.Background(), []string{text})
		if err != nil {
			t.Fatal(err)
		}
		if c := embed.Cosine(all[i], one[0]); c < float32(minCos) {
			t.Errorf("%q: batched vs alone cosine %.6f, want ≥ %v", text, c, minCos)
		}
		var norm float64
		for _, x := range all[i] {
			norm += float64(x) * float64(x)
		}
		if math.Abs(norm-1) > 1e-4 {
			t.Errorf("%q: |v|² = %.6f, want 1", text, norm)
		}
	}
	if embed.Cosine(all[0], all[5]) < 0.9999 {
		t.Error("the same text twice gave different vectors")
	}
}

func TestONNXTruncates(t *testing.T) {
	e := openModel(t, WithMaxLen(16))
	long := ""
	for i := 0; i < 400; i++ {
		long += fmt.Sprintf("word%d ", i)
	}
	vecs, err := e.Embed(context.Background(), []string{long, long[:40]})
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs) != 2 || len(vecs[0]) != 384 {
		t.Fatalf("got %d vectors", len(vecs))
	}
}

func TestONNXConcurrentAndClose(t *testing.T) {
	e := openModel(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := e.Embed(context.Background(), []string{fmt.Sprintf("goroutine %d asks about hiking", g), "and the weather"})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Embed(ctx, []string{"x"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Embed(cancelled ctx) = %v, want context.Canceled", err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Embed(context.Background(), []string{"x"}); !errors.Is(err, ErrClosed) {
		t.Errorf("Embed after Close = %v, want ErrClosed", err)
	}
	if err := e.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

// paraphraseTriples: an anchor, a hand-written paraphrase that shares few words with it,
// and a hand-written "hard" distractor that shares more words with the anchor but means
// something else (the hash embedder, which matches words, loses on nearly all of them).
var paraphraseTriples = []struct{ anchor, paraphrase, distractor string }{
	{"Do I like hiking?", "My favourite hobby is trekking in the mountains.", "I like my coffee black."},
	{"Where does Anna live?", "Anna's home is in a small flat in Lisbon.", "Anna likes to live music concerts."},
	{"What is the user's job?", "She works as a nurse at the city hospital.", "The job queue is stuck on the user service."},
	{"I am allergic to peanuts.", "Eating nuts gives me a severe reaction.", "I bought peanuts for the party."},
	{"The meeting was moved to Thursday.", "We rescheduled the call for later this week, on Thursday.", "The meeting room has a broken projector."},
	{"He adopted a puppy last month.", "A few weeks ago he got a young dog from the shelter.", "He adopted a new budgeting method last month."},
	{"My car broke down on the highway.", "The vehicle stopped working while I was driving on the motorway.", "My car is red and parked on the highway."},
	{"She is learning to play the violin.", "She takes lessons on a string instrument.", "She is learning to drive."},
	{"The project deadline is next Friday.", "We have to deliver the work by the end of next week.", "The project uses Friday as a code name."},
	{"I feel exhausted after work.", "My job leaves me completely drained every evening.", "I feel excited about the new work laptop."},
	{"We went to Japan for our honeymoon.", "After the wedding we travelled to Tokyo and Kyoto.", "We went to the Japanese restaurant for lunch."},
	{"The server crashed because it ran out of memory.", "An out-of-memory error brought the machine down.", "The server is in the memory room."},
	{"Can you recommend a good book?", "What novel should I read next?", "Can you book a table for two?"},
	{"My sister just had a baby.", "I became an aunt yesterday when my sibling gave birth.", "My sister just bought a baby blue car."},
	{"I quit smoking two years ago.", "I haven't had a cigarette since two years back.", "I quit my gym two years ago."},
	{"The price of the flat is too high.", "That apartment costs more than I can afford.", "The flat tyre is too high to reach."},
	{"He prefers tea over coffee.", "He'd rather drink tea than coffee.", "He spilled coffee over the tea towel."},
	{"I'm vegetarian.", "I don't eat meat.", "I'm a veterinarian."},
	{"The kids start school in September.", "The children go back to class in the autumn.", "The school kids play in September's football match."},
	{"My laptop battery dies quickly.", "The notebook doesn't hold its charge for long.", "My laptop bag is quickly falling apart."},
	{"She was promoted to manager.", "She got a new role leading the team.", "She was promoted in a radio advert."},
	{"It rained all weekend.", "Saturday and Sunday were wet and stormy.", "It was all about the weekend sale."},
	{"I need to renew my passport.", "My travel document expires soon and must be replaced.", "I need to remember my password."},
	{"The dog barks at the mailman.", "Our pet makes a lot of noise whenever the postman comes.", "The dog park is near the mail office."},
	{"He runs a marathon every year.", "Each year he completes a 42-kilometre race.", "He runs a small bakery every year at the fair."},
	{"We are saving money for a house.", "We put aside part of our income to buy a home.", "We are saving the house plants from the frost."},
	{"I can't sleep at night.", "I suffer from insomnia.", "I can't find the night train."},
	{"The film was really boring.", "The movie put me to sleep, nothing happened.", "The film was shot in a really old studio."},
	{"My grandmother taught me to cook.", "I learned cooking from my gran.", "My grandmother's cooker is broken."},
	{"The flight was delayed by three hours.", "Our plane took off three hours late.", "The flight attendant served three drinks."},
	{"She speaks fluent Spanish.", "She has native-level command of Spanish.", "She bought a Spanish guitar."},
	{"Turn off the lights when you leave.", "Please switch off the lamps on your way out.", "The lights leave a warm glow."},
	{"Our team won the championship.", "We took first place in the league.", "Our team is meeting for the championship party planning."},
	{"I moved to Berlin for a new job.", "I relocated to Germany's capital after accepting a position there.", "I moved the Berlin photos to a new folder."},
}

// TestONNXParaphrases is the acceptance check. Against an unrelated sentence (the next
// triple's paraphrase: another topic) the paraphrase must score higher for at least 90%
// of the triples; against the hard, word-sharing distractors for at least 70%, and
// far better than the hash embedder. It prints all the rates.
func TestONNXParaphrases(t *testing.T) {
	if len(paraphraseTriples) < 30 {
		t.Fatalf("%d triples, want at least 30", len(paraphraseTriples))
	}
	e := openModel(t)
	type rates struct{ unrelated, hard float64 }
	measure := func(emb embed.Embedder) (rates, []string) {
		var texts []string
		for _, tr := range paraphraseTriples {
			texts = append(texts, tr.anchor, tr.paraphrase, tr.distractor)
		}
		vecs, err := emb.Embed(context.Background(), texts)
		if err != nil {
			t.Fatal(err)
		}
		n := len(paraphraseTriples)
		var r rates
		var misses []string
		for i, tr := range paraphraseTriples {
			a, p, d := vecs[3*i], vecs[3*i+1], vecs[3*i+2]
			other := vecs[3*((i+1)%n)+1]
			sp := embed.Cosine(a, p)
			if so := embed.Cosine(a, other); sp > so {
				r.unrelated++
			} else {
				misses = append(misses, fmt.Sprintf("unrelated: %q: paraphrase %.3f ≤ %.3f", tr.anchor, sp, so))
			}
			if sd := embed.Cosine(a, d); sp > sd {
				r.hard++
			} else {
				misses = append(misses, fmt.Sprintf("hard: %q: paraphrase %.3f ≤ distractor %.3f", tr.anchor, sp, sd))
			}
		}
		r.unrelated /= float64(n)
		r.hard /= float64(n)
		return r, misses
	}
	got, misses := measure(e)
	hash, _ := measure(embed.NewHash())
	t.Logf("paraphrase wins over %d triples: %s unrelated %.1f%%, hard %.1f%%; %s unrelated %.1f%%, hard %.1f%%",
		len(paraphraseTriples), e.Model(), 100*got.unrelated, 100*got.hard, embed.HashModel, 100*hash.unrelated, 100*hash.hard)
	for _, m := range misses {
		t.Logf("miss: %s", m)
	}
	if got.unrelated < 0.9 {
		t.Errorf("paraphrase > unrelated sentence for %.1f%% of triples, want ≥ 90%%", 100*got.unrelated)
	}
	if got.hard < 0.7 || got.hard < hash.hard+0.3 {
		t.Errorf("paraphrase > hard distractor for %.1f%% of triples (hash %.1f%%), want ≥ 70%% and 30 points over hash", 100*got.hard, 100*hash.hard)
	}
}

// TestONNXPromptedModels runs the prompted models of scripts/model.sh (e5-small-v2-int8, the
// default, and bge-small-en-v1.5-int8), each from the directory its env var names, else from
// the repository's data/models-<id> (where .ci/run puts the models other than the default),
// else data/models when it holds that model. Without one the test skips outside CI and fails
// in CI.
func TestONNXPromptedModels(t *testing.T) {
	for _, m := range []struct{ env, id, queryP string }{
		{"MEMBUS_TEST_E5_MODEL_DIR", "e5-small-v2-int8", "query: "},
		{"MEMBUS_TEST_BGE_MODEL_DIR", "bge-small-en-v1.5-int8", "Represent this sentence for searching relevant passages: "},
	} {
		t.Run(m.id, func(t *testing.T) {
			e, err := New(optInModelDir(t, m.env, m.id))
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			if e.Dim() != 384 || e.Model() != "onnx:"+m.id || e.queryP != m.queryP {
				t.Fatalf("Dim, Model, query prompt = %d, %s, %q", e.Dim(), e.Model(), e.queryP)
			}
			ctx := context.Background()
			docs := []string{
				"I started taking pottery classes last month and I love it.",
				"My sister is moving to Seattle next week.",
				"We adopted a puppy named Max from the shelter.",
			}
			dv, err := e.Embed(ctx, docs)
			if err != nil {
				t.Fatal(err)
			}
			queries := []string{"What hobby did she pick up?", "Where is her sister moving?", "What is the name of their dog?"}
			qv, err := embed.EmbedQuery(ctx, e, queries)
			if err != nil {
				t.Fatal(err)
			}
			same, _ := e.Embed(ctx, queries[:1])
			if embed.Cosine(qv[0], same[0]) > 0.9999 {
				t.Error("a query embeds as a document: the query prompt is not applied")
			}
			for i, q := range qv {
				best := 0
				for j := range dv {
					if embed.Cosine(q, dv[j]) > embed.Cosine(q, dv[best]) {
						best = j
					}
				}
				if best != i {
					t.Errorf("%q: best document %q, want %q", queries[i], docs[best], docs[i])
				}
			}
		})
	}
}

func TestScaleCosine(t *testing.T) {
	e := &Embedder{}
	if got := e.ScaleCosine(0.4); got != 0.4 {
		t.Fatalf("no scale: ScaleCosine(0.4) = %v, want 0.4", got)
	}
	e.cosShift, e.cosScale = 0.7, 4
	if got := e.ScaleCosine(0.8); math.Abs(got-0.4) > 1e-12 {
		t.Fatalf("shift 0.7, scale 4: ScaleCosine(0.8) = %v, want 0.4", got)
	}
}

func TestDirModel(t *testing.T) {
	files := func(extra map[string]string) map[string]string {
		m := map[string]string{"model.onnx": "x", "vocab.txt": "x", "libonnxruntime.so": "x"}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name  string
		files map[string]string
		want  string
		err   bool
	}{
		{"empty dir: no model", nil, "", false},
		{"model_id but no model files: no model", map[string]string{"model_id": "e5-small-v2-int8\n"}, "", false},
		{"scripts/model.sh's layout", files(map[string]string{"model_id": "all-MiniLM-L6-v2-int8\n"}), "onnx:all-MiniLM-L6-v2-int8", false},
		{"no model_id: the dir's name", files(nil), "onnx:m", false},
		{"a bad config is an error", files(map[string]string{"pooling_config.json": "{"}), "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeModelDir(t, tt.files)
			got, err := DirModel(dir)
			if (err != nil) != tt.err || got != tt.want {
				t.Fatalf("DirModel = %q, %v; want %q, error %v", got, err, tt.want, tt.err)
			}
		})
	}
}

// BenchmarkEmbedQuery embeds one question at a time, as recall does, with the default model and
// with each model directory MEMBUS_BENCH_MODEL_DIRS lists (colon-separated), in one run so their
// times compare on a shared machine (docs/recall-quality.md, issue 18's sub-query round).
func BenchmarkEmbedQuery(b *testing.B) {
	dirs := []string{modelDir(b)}
	if extra := os.Getenv("MEMBUS_BENCH_MODEL_DIRS"); extra != "" {
		dirs = append(dirs, strings.Split(extra, ":")...)
	}
	questions := []string{"What did Caroline research about adoption agencies last week?", "Which city did Melanie visit with her kids?"}
	for _, dir := range dirs {
		e, err := New(dir)
		if err != nil {
			b.Fatalf("%s: %v", dir, err)
		}
		b.Run(strings.TrimPrefix(e.Model(), "onnx:"), func(b *testing.B) {
			ctx := context.Background()
			for i := 0; b.Loop(); i++ {
				if _, err := e.EmbedQuery(ctx, questions[i%2:i%2+1]); err != nil {
					b.Fatal(err)
				}
			}
		})
		if err := e.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEmbedQueryMasked is recall's per-person batch beside the question's own run
// (docs/recall-quality.md, issue 18's person round): one row as EmbedQuery runs it, then
// the question's batch of two and of three rows with names masked out.
func BenchmarkEmbedQueryMasked(b *testing.B) {
	e := openModel(b)
	ctx := context.Background()
	const q = "What pets do Audrey and Andrew both have?"
	drops := [][]string{{}, {"Andrew", "both", "and"}, {"Audrey", "both", "and"}}
	b.Run("query", func(b *testing.B) {
		for b.Loop() {
			if _, err := e.EmbedQuery(ctx, []string{q}); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, rows := range []int{2, 3} {
		b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
			for b.Loop() {
				if _, err := e.EmbedQueryMasked(ctx, q, drops[3-rows:]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestONNXEmbedQueryMasked: a row that masks nothing is EmbedQuery's vector, and a row with the
// other person's name (and "both", "and") masked reads as the question about one person.
func TestONNXEmbedQueryMasked(t *testing.T) {
	e := openModel(t)
	ctx := context.Background()
	const q = "What pets do Audrey and Andrew both have?"
	asked, err := e.EmbedQuery(ctx, []string{q, "What pets do Audrey have?", "What pets do Andrew have?"})
	if err != nil {
		t.Fatal(err)
	}
	alone, err := e.EmbedQueryMasked(ctx, q, [][]string{{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(alone) != 1 || !slices.Equal(alone[0], mustQuery(t, e, q)) {
		t.Fatalf("a row that masks nothing differs from EmbedQuery's vector")
	}
	rows, err := e.EmbedQueryMasked(ctx, q, [][]string{{"ANDREW", "both", "and"}, {"Audrey", "both", "and"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("got %d rows, want 2", len(rows))
	}
	for i, person := range []int{1, 2} {
		masked, whole := embed.Cosine(rows[i], asked[person]), embed.Cosine(asked[0], asked[person])
		t.Logf("row %d: cosine with the one-person question %.4f, the whole question's %.4f", i, masked, whole)
		if masked <= whole {
			t.Errorf("row %d is no nearer the one-person question (%.4f) than the whole question is (%.4f)", i, masked, whole)
		}
	}
	if none, err := e.EmbedQueryMasked(ctx, q, nil); err != nil || len(none) != 0 {
		t.Fatalf("no drop lists: %d rows, %v; want none", len(none), err)
	}
}

func mustQuery(t *testing.T, e *Embedder, q string) []float32 {
	t.Helper()
	v, err := e.EmbedQuery(context.Background(), []string{q})
	if err != nil {
		t.Fatal(err)
	}
	return v[0]
}
