package qdrant

import (
	"errors"
	"math"
	"testing"

	"github.com/membus/membus/pkg/vector"
)

func TestTermIndexIsFNV1a32(t *testing.T) {
	// FNV-1a 32 reference values: the index must never change between
	// releases, or existing points stop matching new queries.
	for term, want := range map[string]uint32{"": 0x811c9dc5, "a": 0xe40c292c, "foobar": 0xbf9cf968} {
		if got := termIndex(term); got != want {
			t.Errorf("termIndex(%q) = %#x, want %#x", term, got, want)
		}
	}
}

func TestDocSparse(t *testing.T) {
	tf := func(x, docLen float64) float32 {
		return float32(x * 2.2 / (x + 1.2*(1-0.75+0.75*docLen/10)))
	}
	tests := []struct {
		name string
		text string
		want map[string]float32
	}{
		{"a repeated term is one dimension with its count", "tea tea coffee", map[string]float32{"tea": tf(2, 3), "coffee": tf(1, 3)}},
		{"stop words are not terms, words are stemmed", "the user likes tea", map[string]float32{"user": tf(1, 3), "like": tf(1, 3), "tea": tf(1, 3)}},
		{"no terms, no vector", "the of and", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			idx, val := docSparse(tc.text, 10)
			if len(idx) != len(tc.want) || len(val) != len(idx) {
				t.Fatalf("got %v %v, want %v", idx, val, tc.want)
			}
			for term, w := range tc.want {
				found := false
				for i, x := range idx {
					if x == termIndex(term) {
						found = true
						if math.Abs(float64(val[i]-w)) > 1e-6 {
							t.Errorf("%s = %v, want %v", term, val[i], w)
						}
					}
				}
				if !found {
					t.Errorf("term %s missing", term)
				}
			}
			for i := 1; i < len(idx); i++ {
				if idx[i] <= idx[i-1] {
					t.Fatalf("indices not sorted and unique: %v", idx)
				}
			}
		})
	}
}

func TestQuerySparse(t *testing.T) {
	idx, val := querySparse("Tea, tea and COFFEE")
	if len(idx) != 2 || val[0] != 1 || val[1] != 1 {
		t.Fatalf("got %v %v, want two distinct terms of weight 1", idx, val)
	}
	if idx, _ := querySparse("the for is"); idx != nil {
		t.Fatalf("stop words gave %v", idx)
	}
}

func TestParseURL(t *testing.T) {
	tests := []struct {
		name, url, key string
		want           endpoint
		wantErr        bool
	}{
		{"default gRPC port", "http://qdrant", "", endpoint{host: "qdrant", port: 6334}, false},
		{"https is TLS", "https://q.example:6334", "", endpoint{host: "q.example", port: 6334, tls: true}, false},
		{"api key from the URL", "http://q:7000?api-key=k1", "", endpoint{host: "q", port: 7000, apiKey: "k1"}, false},
		{"explicit api key wins", "http://q?api-key=k1", "k2", endpoint{host: "q", port: 6334, apiKey: "k2"}, false},
		{"other scheme refused", "grpc://q:6334", "", endpoint{}, true},
		{"no host refused", "http://:6334", "", endpoint{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseURL(tc.url, tc.key)
			if tc.wantErr {
				if !errors.Is(err, vector.ErrInvalid) {
					t.Fatalf("err = %v, want ErrInvalid", err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v %v, want %+v", got, err, tc.want)
			}
		})
	}
}
