// Package onnx is the local embedding model: a sentence-embedding model run with ONNX Runtime
// (its shared library loaded from the model directory). Only the composition root imports it.
package onnx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/membus/membus/pkg/embed"
)

// ONNX defaults.
const (
	DefaultBatch  = 32
	DefaultMaxLen = 256
)

// DefaultModel is the model `make model` (scripts/model.sh's default_model) fetches into a
// directory that holds none; a directory that holds a model keeps it unless MODEL= names
// another. all-MiniLM-L6-v2-int8 was the default before it: data dirs embedded with it keep it.
const DefaultModel = "e5-small-v2-int8"

// ErrNoModel: the model directory lacks model.onnx, vocab.txt or libonnxruntime.so; run
// `make model` (scripts/model.sh) to fetch them.
var ErrNoModel = errors.New("embed: no ONNX model (run `make model` to fetch it)")

// ErrClosed: Embed after Close.
var ErrClosed = errors.New("embed: embedder closed")

// Files are the files New needs in the model directory.
var Files = []string{"model.onnx", "vocab.txt", "libonnxruntime.so"}

// Embedder runs a BERT-style sentence-embedding model (e.g. all-MiniLM-L6-v2) with ONNX
// Runtime: WordPiece tokens, batches padded to their longest item (texts are sorted by
// length first, so a batch holds texts of similar length), the model's pooling (mean
// over the attention mask, or the [CLS] token) and L2 normalisation. One model run at a
// time (ONNX Runtime already uses every core it is given for one run); safe for
// concurrent use.
type Embedder struct {
	id       string
	dim      int
	maxLen   int
	batch    int
	cls      bool   // [CLS] pooling, else mean pooling
	queryP   string // prepended to a query (EmbedQuery), e.g. e5's "query: "
	docP     string // prepended to a document (Embed), e.g. e5's "passage: "
	cosShift float64
	cosScale float64 // ScaleCosine: (cos - cosShift) * cosScale; 0: none
	dupCos   float64 // DuplicateCosine; 0: the extraction rules' own
	tok      *embed.WordPiece
	inputs   []string // input_ids, attention_mask[, token_type_ids]
	pooled   bool     // the output is already [batch, dim]
	releaseE func()

	mu   sync.Mutex
	sess *ort.DynamicAdvancedSession
}

type options struct {
	batch   int
	maxLen  int
	threads int
	lib     string
}

// Option configures New.
type Option func(*options)

// WithBatch sets the most texts per model run (default 32).
func WithBatch(n int) Option { return func(o *options) { o.batch = n } }

// WithMaxLen caps tokens per text, [CLS] and [SEP] included (default 256, or the
// model's max_seq_length when smaller).
func WithMaxLen(n int) Option { return func(o *options) { o.maxLen = n } }

// WithThreads sets ONNX Runtime's intra-op threads (default: its own, one per core).
func WithThreads(n int) Option { return func(o *options) { o.threads = n } }

// Present reports whether modelDir holds the files New needs.
func Present(modelDir string) bool {
	for _, f := range Files {
		if _, err := os.Stat(filepath.Join(modelDir, f)); err != nil {
			return false
		}
	}
	return true
}

// DirModel returns the model id New would give the model in modelDir ("onnx:" + its
// model_id, e.g. "onnx:e5-small-v2-int8"), read from the directory without loading the model:
// "" when modelDir does not hold the files New needs (Present).
func DirModel(modelDir string) (string, error) {
	if !Present(modelDir) {
		return "", nil
	}
	cfg, err := readModelConfig(modelDir)
	if err != nil {
		return "", err
	}
	return "onnx:" + cfg.id, nil
}

// New loads the model in modelDir, as laid out by scripts/model.sh: model.onnx,
// vocab.txt, libonnxruntime.so, and the sentence-transformers configs (config.json,
// tokenizer_config.json, sentence_bert_config.json, pooling_config.json,
// config_sentence_transformers.json) and model_id when present. Close releases it.
func New(modelDir string, opts ...Option) (*Embedder, error) {
	o := options{batch: DefaultBatch, maxLen: DefaultMaxLen, lib: filepath.Join(modelDir, "libonnxruntime.so")}
	for _, opt := range opts {
		opt(&o)
	}
	for _, f := range []string{"model.onnx", "vocab.txt"} {
		if _, err := os.Stat(filepath.Join(modelDir, f)); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrNoModel, filepath.Join(modelDir, f), err)
		}
	}
	if _, err := os.Stat(o.lib); err != nil {
		return nil, fmt.Errorf("%w: ONNX Runtime %s: %w", ErrNoModel, o.lib, err)
	}
	cfg, err := readModelConfig(modelDir)
	if err != nil {
		return nil, err
	}
	vf, err := os.Open(filepath.Join(modelDir, "vocab.txt"))
	if err != nil {
		return nil, fmt.Errorf("onnx embedder: %w", err)
	}
	tok, err := embed.NewWordPiece(vf, cfg.lowercase)
	vf.Close()
	if err != nil {
		return nil, fmt.Errorf("onnx embedder %s: %w", modelDir, err)
	}

	e := &Embedder{id: cfg.id, maxLen: max(2, o.maxLen), batch: max(1, o.batch), cls: cfg.cls, queryP: cfg.queryPrompt, docP: cfg.docPrompt,
		cosShift: cfg.cosShift, cosScale: cfg.cosScale, dupCos: cfg.dupCos, tok: tok}
	if cfg.maxLen > 0 {
		e.maxLen = min(e.maxLen, cfg.maxLen)
	}
	release, err := acquireORT(o.lib)
	if err != nil {
		return nil, err
	}
	e.releaseE = release
	if err := e.open(filepath.Join(modelDir, "model.onnx"), o.threads); err != nil {
		release()
		return nil, err
	}
	return e, nil
}

func (e *Embedder) open(path string, threads int) error {
	ins, outs, err := ort.GetInputOutputInfo(path)
	if err != nil {
		return fmt.Errorf("onnx embedder: read %s: %w", path, err)
	}
	have := make(map[string]bool, len(ins))
	for _, in := range ins {
		have[in.Name] = true
	}
	for _, name := range []string{"input_ids", "attention_mask"} {
		if !have[name] {
			return fmt.Errorf("onnx embedder: %s has no %s input (inputs: %v)", path, name, ins)
		}
	}
	e.inputs = []string{"input_ids", "attention_mask"}
	if have["token_type_ids"] {
		e.inputs = append(e.inputs, "token_type_ids")
	}
	if len(ins) != len(e.inputs) {
		return fmt.Errorf("onnx embedder: %s has inputs %v; want input_ids, attention_mask and optionally token_type_ids", path, ins)
	}
	if len(outs) == 0 {
		return fmt.Errorf("onnx embedder: %s has no output", path)
	}
	out := outs[0]
	for _, o := range outs {
		if o.Name == "last_hidden_state" || o.Name == "token_embeddings" {
			out = o
			break
		}
	}
	dims := out.Dimensions
	switch {
	case len(dims) == 3 && dims[2] > 0:
		e.dim = int(dims[2])
	case len(dims) == 2 && dims[1] > 0:
		e.dim, e.pooled = int(dims[1]), true
	default:
		return fmt.Errorf("onnx embedder: %s output %s has shape %v; want [batch, seq, dim] or [batch, dim]", path, out.Name, dims)
	}

	so, err := ort.NewSessionOptions()
	if err != nil {
		return fmt.Errorf("onnx embedder: session options: %w", err)
	}
	defer func() { _ = so.Destroy() }() // freeing native memory; nothing to do if it fails
	// ONNX Runtime's intra-op threads spin between operators by default: on a few shared
	// cores that spinning takes CPU from the recall around the run (and from other
	// processes) and a descheduled spinner stalls the next operator. A query is a hundred
	// small operators, so they sleep instead. The arithmetic is the same.
	if err := so.AddSessionConfigEntry("session.intra_op.allow_spinning", "0"); err != nil {
		return fmt.Errorf("onnx embedder: spinning: %w", err)
	}
	if err := so.AddSessionConfigEntry("session.inter_op.allow_spinning", "0"); err != nil {
		return fmt.Errorf("onnx embedder: spinning: %w", err)
	}
	if threads > 0 {
		if err := so.SetIntraOpNumThreads(threads); err != nil {
			return fmt.Errorf("onnx embedder: threads: %w", err)
		}
		if err := so.SetInterOpNumThreads(1); err != nil {
			return fmt.Errorf("onnx embedder: threads: %w", err)
		}
	}
	sess, err := ort.NewDynamicAdvancedSession(path, e.inputs, []string{out.Name}, so)
	if err != nil {
		return fmt.Errorf("onnx embedder: load %s: %w", path, err)
	}
	e.sess = sess
	return nil
}

// Dim returns the model's hidden size.
func (e *Embedder) Dim() int { return e.dim }

// Model returns "onnx:" + the model id (e.g. "onnx:all-MiniLM-L6-v2-int8").
func (e *Embedder) Model() string { return "onnx:" + e.id }

// Provider returns "onnx".
func (e *Embedder) Provider() string { return "onnx" }

// MaxLen is the most tokens per text the model sees, [CLS] and [SEP] included.
func (e *Embedder) MaxLen() int { return e.maxLen }

// MeanTokens is the mean token count of texts as the model sees them ([CLS] and [SEP]
// included, truncated to MaxLen).
func (e *Embedder) MeanTokens(texts []string) float64 {
	if len(texts) == 0 {
		return 0
	}
	n := 0
	for _, t := range texts {
		n += len(e.tok.Encode(t, e.maxLen))
	}
	return float64(n) / float64(len(texts))
}

// Close releases the model session (and ONNX Runtime when no other ONNX is open).
// Embed after Close is ErrClosed.
func (e *Embedder) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.sess == nil {
		return nil
	}
	err := e.sess.Destroy()
	e.sess = nil
	e.releaseE()
	return err
}

// Embed returns one unit vector per text (a document: the model's document prompt, if
// any, goes first). Texts are tokenised, sorted by token count and run in batches of at
// most the configured batch size, each padded to its longest text; ctx is checked
// between batches.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return e.embed(ctx, texts, e.docP)
}

// DuplicateCosine is the cosine of this model's vectors at and above which two memories are
// near-duplicates (membus_scale.json's duplicate_cosine), 0 when the model names none.
func (e *Embedder) DuplicateCosine() float64 { return e.dupCos }

// ScaleCosine maps a cosine of this model's vectors onto all-MiniLM-L6-v2's scale, by the
// model directory's membus_scale.json ({"cosine_shift": a, "cosine_scale": b}: (cos - a) * b);
// without one it is the cosine itself.
func (e *Embedder) ScaleCosine(cos float64) float64 {
	if e.cosScale == 0 {
		return cos
	}
	return (cos - e.cosShift) * e.cosScale
}

// EmbedQuery is Embed for search queries: the model's query prompt, if any, goes first.
func (e *Embedder) EmbedQuery(ctx context.Context, queries []string) ([][]float32, error) {
	return e.embed(ctx, queries, e.queryP)
}

func (e *Embedder) embed(ctx context.Context, texts []string, prompt string) ([][]float32, error) {
	ids := make([][]int64, len(texts))
	order := make([]int, len(texts))
	for i, t := range texts {
		ids[i] = e.tok.Encode(prompt+t, e.maxLen)
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return len(ids[a]) - len(ids[b]) })
	out := make([][]float32, len(texts))
	for start := 0; start < len(order); start += e.batch {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("onnx embed: %w", err)
		}
		part := order[start:min(start+e.batch, len(order))]
		batch := make([][]int64, len(part))
		for j, i := range part {
			batch[j] = ids[i]
		}
		vecs, err := e.run(batch, nil)
		if err != nil {
			return nil, err
		}
		for j, i := range part {
			out[i] = vecs[j]
		}
	}
	return out, nil
}

// EmbedQueryMasked implements embed.MaskedQueryEmbedder: the query (with the model's query
// prompt) is tokenised once and run as one batch of len(drops) rows of the same ids, each
// with the words of its drop list (whole words, any case) masked out of the attention and of
// the pooling, so the model reads the question without them and no second tokenisation or
// padding moves the other tokens.
func (e *Embedder) EmbedQueryMasked(ctx context.Context, query string, drops [][]string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("onnx embed: %w", err)
	}
	if len(drops) == 0 {
		return [][]float32{}, nil
	}
	ids, words := e.tok.EncodeWords(e.queryP+query, e.maxLen)
	batch := make([][]int64, len(drops))
	masks := make([][]int64, len(drops))
	for r, drop := range drops {
		batch[r] = ids
		masks[r] = make([]int64, len(ids))
		for j, w := range words {
			masks[r][j] = 1
			if w != "" && slices.ContainsFunc(drop, func(d string) bool { return strings.EqualFold(d, w) }) {
				masks[r][j] = 0
			}
		}
	}
	return e.run(batch, masks)
}

// run embeds one batch of token ids, padded to the longest. masks, when set, is each row's
// attention mask over its ids (1: read and pooled); nil reads every id.
func (e *Embedder) run(batch [][]int64, masks [][]int64) ([][]float32, error) {
	n, seq := len(batch), 0
	for _, b := range batch {
		seq = max(seq, len(b))
	}
	inputIDs := make([]int64, n*seq)
	mask := make([]int64, n*seq)
	for i, b := range batch {
		row := inputIDs[i*seq : (i+1)*seq]
		copy(row, b)
		for j := len(b); j < seq; j++ {
			row[j] = e.tok.PadID()
		}
		for j := range b {
			mask[i*seq+j] = 1
			if masks != nil {
				mask[i*seq+j] = masks[i][j]
			}
		}
	}
	// One run at a time; holding the lock from the first tensor on keeps Close (which may
	// end ONNX Runtime) from racing the run.
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.sess == nil {
		return nil, ErrClosed
	}
	shape := ort.NewShape(int64(n), int64(seq))
	var inputs []ort.Value
	defer func() {
		for _, v := range inputs {
			_ = v.Destroy() // freeing native memory; nothing to do if it fails
		}
	}()
	for _, data := range [][]int64{inputIDs, mask, make([]int64, n*seq)}[:len(e.inputs)] {
		t, err := ort.NewTensor(shape, data)
		if err != nil {
			return nil, fmt.Errorf("onnx embed: input tensor: %w", err)
		}
		inputs = append(inputs, t)
	}

	outputs := []ort.Value{nil}
	if err := e.sess.Run(inputs, outputs); err != nil {
		return nil, fmt.Errorf("onnx embed: run batch of %d×%d: %w", n, seq, err)
	}
	defer func() { _ = outputs[0].Destroy() }() // freeing native memory; nothing to do if it fails
	t, ok := outputs[0].(*ort.Tensor[float32])
	if !ok {
		return nil, fmt.Errorf("onnx embed: output is %T, want float32 tensor", outputs[0])
	}
	data, got := t.GetData(), t.GetShape()
	want := ort.NewShape(int64(n), int64(seq), int64(e.dim))
	if e.pooled {
		want = ort.NewShape(int64(n), int64(e.dim))
	}
	if !slices.Equal(got, want) {
		return nil, fmt.Errorf("onnx embed: output shape %v, want %v", got, want)
	}
	vecs := make([][]float32, n)
	for i, b := range batch {
		v := make([]float32, e.dim)
		switch {
		case e.pooled:
			copy(v, data[i*e.dim:(i+1)*e.dim])
		case e.cls:
			copy(v, data[i*seq*e.dim:i*seq*e.dim+e.dim])
		default: // mean over the tokens read (attention mask 1)
			acc := make([]float64, e.dim)
			read := 0
			for j := range b {
				if mask[i*seq+j] == 0 {
					continue
				}
				read++
				tok := data[(i*seq+j)*e.dim : (i*seq+j+1)*e.dim]
				for k, x := range tok {
					acc[k] += float64(x)
				}
			}
			for k := range v {
				v[k] = float32(acc[k] / float64(max(read, 1)))
			}
		}
		embed.Normalize(v)
		vecs[i] = v
	}
	return vecs, nil
}

// modelConfig is what New reads from the sentence-transformers files.
type modelConfig struct {
	id        string
	maxLen    int
	lowercase bool
	cls       bool
	// queryPrompt and docPrompt go before a query and a document
	// (config_sentence_transformers.json's prompts "query" and "document" or "passage").
	queryPrompt, docPrompt string
	// cosShift and cosScale: membus_scale.json's cosine_shift and cosine_scale.
	cosShift, cosScale float64
	// dupCos: membus_scale.json's duplicate_cosine (the near-duplicate threshold for this
	// model's raw cosines; 0: the extraction rules' own).
	dupCos float64
}

// readModelConfig reads model_id, tokenizer_config.json (do_lower_case),
// sentence_bert_config.json (max_seq_length, do_lower_case), pooling_config.json
// (pooling_mode_cls_token / pooling_mode_mean_tokens) and config_sentence_transformers.json
// (prompts: "query", and "document" or "passage") and membus_scale.json (cosine_shift,
// cosine_scale: membus's own, for a model whose cosines sit on another scale); each is optional. Without a
// tokenizer config the model is taken as uncased (lower-case), as BERT's default.
func readModelConfig(dir string) (modelConfig, error) {
	c := modelConfig{id: filepath.Base(filepath.Clean(dir)), lowercase: true}
	if b, err := os.ReadFile(filepath.Join(dir, "model_id")); err == nil {
		if id := strings.TrimSpace(string(b)); id != "" {
			c.id = id
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return c, fmt.Errorf("onnx embedder: %w", err)
	}
	var tc struct {
		DoLowerCase *bool `json:"do_lower_case"`
	}
	var sb struct {
		MaxSeqLength int   `json:"max_seq_length"`
		DoLowerCase  *bool `json:"do_lower_case"`
	}
	var st struct {
		Prompts map[string]string `json:"prompts"`
	}
	var sc struct {
		Shift float64 `json:"cosine_shift"`
		Scale float64 `json:"cosine_scale"`
		Dup   float64 `json:"duplicate_cosine"`
	}
	var pc struct {
		CLS  bool `json:"pooling_mode_cls_token"`
		Mean bool `json:"pooling_mode_mean_tokens"`
		Max  bool `json:"pooling_mode_max_tokens"`
		Sqrt bool `json:"pooling_mode_mean_sqrt_len_tokens"`
	}
	for _, f := range []struct {
		name string
		v    any
	}{{"tokenizer_config.json", &tc}, {"sentence_bert_config.json", &sb}, {"pooling_config.json", &pc}, {"config_sentence_transformers.json", &st}, {"membus_scale.json", &sc}} {
		b, err := os.ReadFile(filepath.Join(dir, f.name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return c, fmt.Errorf("onnx embedder: %w", err)
		}
		if err := json.Unmarshal(b, f.v); err != nil {
			return c, fmt.Errorf("onnx embedder: %s: %w", filepath.Join(dir, f.name), err)
		}
	}
	// sentence-transformers' do_lower_case is an extra lower-casing on top of the
	// tokenizer's; the tokenizer's setting is the one that matches the vocabulary.
	if tc.DoLowerCase != nil {
		c.lowercase = *tc.DoLowerCase
	}
	if sb.DoLowerCase != nil && *sb.DoLowerCase {
		c.lowercase = true
	}
	c.maxLen = sb.MaxSeqLength
	if pc.Max || pc.Sqrt || (pc.CLS && pc.Mean) {
		return c, fmt.Errorf("onnx embedder: %s: only mean or CLS pooling is supported", filepath.Join(dir, "pooling_config.json"))
	}
	c.cls = pc.CLS
	if sc.Scale < 0 {
		return c, fmt.Errorf("onnx embedder: %s: cosine_scale %v is negative", filepath.Join(dir, "membus_scale.json"), sc.Scale)
	}
	if sc.Dup < 0 || sc.Dup > 1 {
		return c, fmt.Errorf("onnx embedder: %s: duplicate_cosine %v is outside [0, 1]", filepath.Join(dir, "membus_scale.json"), sc.Dup)
	}
	c.cosShift, c.cosScale, c.dupCos = sc.Shift, sc.Scale, sc.Dup
	c.queryPrompt = st.Prompts["query"]
	c.docPrompt = st.Prompts["document"]
	if c.docPrompt == "" {
		c.docPrompt = st.Prompts["passage"]
	}
	return c, nil
}

// ONNX Runtime is one environment per process: the first New starts it with its
// library, the last Close ends it.
var (
	ortMu   sync.Mutex
	ortRefs int
	ortLib  string
)

func acquireORT(lib string) (func(), error) {
	ortMu.Lock()
	defer ortMu.Unlock()
	if ortRefs == 0 {
		ort.SetSharedLibraryPath(lib)
		if err := ort.InitializeEnvironment(ort.WithLogLevelError()); err != nil {
			return nil, fmt.Errorf("onnx embedder: start ONNX Runtime from %s: %w", lib, err)
		}
		ortLib = lib
	} else if lib != ortLib {
		return nil, fmt.Errorf("onnx embedder: ONNX Runtime is already loaded from %s, not %s", ortLib, lib)
	}
	ortRefs++
	var once sync.Once
	return func() {
		once.Do(func() {
			ortMu.Lock()
			defer ortMu.Unlock()
			ortRefs--
			if ortRefs == 0 {
				_ = ort.DestroyEnvironment()
			}
		})
	}, nil
}
