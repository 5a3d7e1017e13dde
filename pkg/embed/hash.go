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
// the features, weights, stemmer or hash function change: old
// indexes must not mix with new vectors (keep the old version selectable by
// its id, as HashV1 is).
const HashModel = "hash-v2-384"

// Feature kinds.
const (
	kindUnigram byte = 'u'
	kindBigram  byte = 'b'
	kindTrigram byte = 't'
)

// Feature weights. Unigrams carry the topic, bigrams word order, character
// 3-grams morphology and typos.
const (
	weightUnigram = 1.0
	weightBigram  = 0.5
	weightTrigram = 0.35
)

// Hash is the hash-v2-384 embedder, a signed feature-hashing embedder. Text
// is split into lower-cased runs of letters and digits; each word gives a
// unigram and (with the word before it) a bigram of its light stem
// (hashStem: "hikes", "hiked" and "hiking" are one feature), and character
// 3-grams of the word as written, padded with spaces. Features are hashed
// with 64-bit FNV-1a into HashDim buckets, the sign taken from a high hash
// bit, with sublinear term weights (1 + ln tf), L2-normalised. It is
// deterministic across runs and machines and needs no model files. Empty
// text (or text without letters or digits) gives the zero vector.
//
// hash-v2 differs from hash-v1 (HashV1) by the stemmed word features and the
// float64 accumulation.
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
	if len(words) == 0 {
		return make([]float32, HashDim)
	}
	// term frequencies per feature hash, weighted by feature kind
	tf := make(map[uint64]float64, len(words)*8)
	weight := make(map[uint64]float64, len(words)*8)
	add := func(h uint64, w float64) {
		tf[h]++
		weight[h] = w
	}
	var runes []rune
	prev := ""
	for i, w := range words {
		s := hashStem(w)
		add(fnv64a(fnvOffset, kindUnigram, s), weightUnigram)
		if i > 0 {
			h := fnv64a(fnvOffset, kindBigram, prev)
			h = fnvString(fnvByte(h, ' '), s)
			add(h, weightBigram)
		}
		prev = s
		runes = append(runes[:0], ' ')
		runes = append(runes, []rune(w)...)
		runes = append(runes, ' ')
		for j := 0; j+3 <= len(runes); j++ {
			add(fnv64a(fnvOffset, kindTrigram, string(runes[j:j+3])), weightTrigram)
		}
	}
	return hashVector(tf, weight)
}

// hashVector folds weighted feature counts into a signed, L2-normalised
// HashDim vector: bucket from the low 32 bits, sign from the top bit, value
// weight × (1 + ln tf), summed in float64 so the result does not depend on
// the order the features are visited in.
func hashVector(tf, weight map[uint64]float64) []float32 {
	acc := make([]float64, HashDim)
	for h, n := range tf {
		val := weight[h] * (1 + math.Log(n))
		idx := (h & 0xffffffff) % HashDim
		if h>>63 == 1 {
			val = -val
		}
		acc[idx] += val
	}
	var norm float64
	for _, x := range acc {
		norm += x * x
	}
	v := make([]float32, HashDim)
	if norm == 0 {
		return v
	}
	inv := 1 / math.Sqrt(norm)
	for i, x := range acc {
		v[i] = float32(x * inv)
	}
	return v
}

// hashStem is a light English stemmer (steps 1a–1c of Porter's algorithm):
// plurals, -ed, -ing and a final -y, so "hikes", "hiking" and "hiked" share
// the stem "hike". Words with characters outside a–z and words of up to
// three letters are kept as they are.
func hashStem(w string) string {
	if len(w) <= 3 {
		return w
	}
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return w
		}
	}
	return porterStep1(w)
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

// porterStep1 applies steps 1a, 1b and 1c of Porter's stemming algorithm
// (M.F. Porter, 1980) to a lower-case a–z word. It is part of hash-v2's
// features: any change to it changes HashModel's vectors (bump the model
// id). pkg/vector keeps its own copy for BM25 terms on purpose, so a change
// to the keyword tokenizer can never silently change stored embeddings.
func porterStep1(w string) string {
	// Step 1a.
	switch {
	case strings.HasSuffix(w, "sses"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "ies"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "ss"):
	case strings.HasSuffix(w, "s"):
		w = w[:len(w)-1]
	}
	// Step 1b.
	tidy := false
	switch {
	case strings.HasSuffix(w, "eed"):
		if porterMeasure(w[:len(w)-3]) > 0 {
			w = w[:len(w)-1]
		}
	case strings.HasSuffix(w, "ed") && porterHasVowel(w[:len(w)-2]):
		w, tidy = w[:len(w)-2], true
	case strings.HasSuffix(w, "ing") && porterHasVowel(w[:len(w)-3]):
		w, tidy = w[:len(w)-3], true
	}
	if tidy {
		n := len(w)
		switch {
		case strings.HasSuffix(w, "at"), strings.HasSuffix(w, "bl"), strings.HasSuffix(w, "iz"):
			w += "e"
		case n >= 2 && w[n-1] == w[n-2] && porterConsonant(w, n-1) && w[n-1] != 'l' && w[n-1] != 's' && w[n-1] != 'z':
			w = w[:n-1]
		case porterMeasure(w) == 1 && porterCVC(w):
			w += "e"
		}
	}
	// Step 1c.
	if strings.HasSuffix(w, "y") && porterHasVowel(w[:len(w)-1]) {
		w = w[:len(w)-1] + "i"
	}
	return w
}

// porterConsonant reports whether w[i] is a consonant: not a, e, i, o, u,
// and y only when it follows a vowel (or starts the word).
func porterConsonant(w string, i int) bool {
	switch w[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
		return i == 0 || !porterConsonant(w, i-1)
	}
	return true
}

// porterMeasure is m in [C](VC){m}[V].
func porterMeasure(w string) int {
	m, i, n := 0, 0, len(w)
	for i < n && porterConsonant(w, i) {
		i++
	}
	for i < n {
		for i < n && !porterConsonant(w, i) {
			i++
		}
		if i == n {
			break
		}
		for i < n && porterConsonant(w, i) {
			i++
		}
		m++
	}
	return m
}

func porterHasVowel(w string) bool {
	for i := range len(w) {
		if !porterConsonant(w, i) {
			return true
		}
	}
	return false
}

// porterCVC reports whether w ends consonant–vowel–consonant, the last not
// w, x or y ("hop", not "snow").
func porterCVC(w string) bool {
	n := len(w)
	if n < 3 || !porterConsonant(w, n-1) || porterConsonant(w, n-2) || !porterConsonant(w, n-3) {
		return false
	}
	c := w[n-1]
	return c != 'w' && c != 'x' && c != 'y'
}
