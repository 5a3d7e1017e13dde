package embed

import (
	"context"
	"fmt"
	"math"
	"strings"
	"unicode"
)

// HashV1Model is the model id of the first hash embedder, kept so that data
// embedded with it stays searchable (MEMBUS_EMBEDDER=auto follows the stored
// model id). Its output must never change.
const HashV1Model = "hash-v1-384"

// Feature weights of hash-v1.
const (
	v1WeightUnigram = 1.0
	v1WeightBigram  = 0.5
	v1WeightTrigram = 0.35
)

// HashV1 is the hash-v1-384 embedder: lower-cased word unigrams, word bigrams
// and character 3-grams of each word padded with spaces, stop words included,
// no stemming, hashed like Hash, sublinear term weights (1 + ln tf),
// L2-normalised. New data uses Hash; this one only serves indexes built with
// it.
type HashV1 struct{}

// NewHashV1 returns the hash-v1-384 embedder.
func NewHashV1() Embedder { return HashV1{} }

// Dim returns HashDim.
func (HashV1) Dim() int { return HashDim }

// Model returns HashV1Model.
func (HashV1) Model() string { return HashV1Model }

// Provider returns "hash".
func (HashV1) Provider() string { return "hash" }

// Embed embeds each text. It checks ctx between texts.
func (h HashV1) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("hash embed: %w", err)
		}
		out[i] = h.embedOne(t)
	}
	return out, nil
}

func (HashV1) embedOne(text string) []float32 {
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
		add(fnv64a(fnvOffset, kindUnigram, w), v1WeightUnigram)
		if i > 0 {
			h := fnv64a(fnvOffset, kindBigram, words[i-1])
			h = fnvString(fnvByte(h, ' '), w)
			add(h, v1WeightBigram)
		}
		runes = append(runes[:0], ' ')
		runes = append(runes, []rune(w)...)
		runes = append(runes, ' ')
		for j := 0; j+3 <= len(runes); j++ {
			add(fnv64a(fnvOffset, kindTrigram, string(runes[j:j+3])), v1WeightTrigram)
		}
	}
	return hashVectorV1(tf, weight)
}

// hashVectorV1 folds weighted feature counts into a signed, L2-normalised
// HashDim vector: bucket from the low 32 bits, sign from the top bit, value
// weight × (1 + ln tf).
func hashVectorV1(tf, weight map[uint64]float64) []float32 {
	v := make([]float32, HashDim)
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
