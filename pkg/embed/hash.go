package embed

import (
	"context"
	"fmt"
	"math"
	"strings"
	"unicode"
)

// HashDim is the dimension of the hash embedder's vectors.
const HashDim = 384

// HashModel is the model id of the hash embedder. Bump the version whenever
// the features, weights or hash function change: old indexes must not mix
// with new vectors.
const HashModel = "hash-v1-384"

// Feature kinds and their weights. Unigrams carry the topic, bigrams word
// order, character 3-grams morphology and typos.
const (
	kindUnigram byte = 'u'
	kindBigram  byte = 'b'
	kindTrigram byte = 't'

	weightUnigram = 1.0
	weightBigram  = 0.5
	weightTrigram = 0.35
)

// Hash is a signed feature-hashing embedder: lower-cased word unigrams, word
// bigrams and character 3-grams of each word padded with spaces, hashed with
// 64-bit FNV-1a into HashDim buckets, the sign taken from a high hash bit,
// sublinear term weights (1 + ln tf), L2-normalised. It is deterministic
// across runs and machines and needs no model files. Empty text (or text
// without letters or digits) gives the zero vector.
type Hash struct{}

// NewHash returns the hash embedder.
func NewHash() Embedder { return Hash{} }

// Dim returns HashDim.
func (Hash) Dim() int { return HashDim }

// Model returns HashModel.
func (Hash) Model() string { return HashModel }

// Provider returns "hash".
func (Hash) Provider() string { return "hash" }

// Embed embeds each text. It checks ctx between texts.
func (h Hash) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("hash embed: %w", err)
		}
		out[i] = h.embedOne(t)
	}
	return out, nil
}

func (Hash) embedOne(text string) []float32 {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	v := make([]float32, HashDim)
	if len(words) == 0 {
		return v
	}
	// term frequencies per feature hash, weighted by feature kind
	tf := make(map[uint64]float64, len(words)*8)
	weight := make(map[uint64]float64, len(words)*8)
	add := func(h uint64, w float64) {
		tf[h]++
		weight[h] = w
	}
	var runes []rune
	for i, w := range words {
		add(fnv64a(fnvOffset, kindUnigram, w), weightUnigram)
		if i > 0 {
			h := fnv64a(fnvOffset, kindBigram, words[i-1])
			h = fnvString(fnvByte(h, ' '), w)
			add(h, weightBigram)
		}
		runes = append(runes[:0], ' ')
		runes = append(runes, []rune(w)...)
		runes = append(runes, ' ')
		for j := 0; j+3 <= len(runes); j++ {
			add(fnv64a(fnvOffset, kindTrigram, string(runes[j:j+3])), weightTrigram)
		}
	}
	for h, n := range tf {
		val := float32(weight[h] * (1 + math.Log(n)))
		idx := (h & 0xffffffff) % HashDim
		if h>>63 == 1 {
			val = -val
		}
		v[idx] += val
	}
	var norm float64
	for _, x := range v {
		norm += float64(x) * float64(x)
	}
	if norm == 0 {
		return v
	}
	inv := float32(1 / math.Sqrt(norm))
	for i := range v {
		v[i] *= inv
	}
	return v
}

const (
	fnvOffset uint64 = 14695981039346656037
	fnvPrime  uint64 = 1099511628211
)

func fnvByte(h uint64, b byte) uint64 {
	h ^= uint64(b)
	h *= fnvPrime
	return h
}

func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

// fnv64a hashes the feature kind then the feature text (FNV-1a, 64 bit).
func fnv64a(h uint64, kind byte, s string) uint64 {
	return fnvString(fnvByte(fnvByte(h, kind), ':'), s)
}
