//go:build !purego

package vector

import "testing"

func TestKernelFits(t *testing.T) {
	tests := []struct {
		name               string
		has                bool
		n, dim, qLen, vLen int
		want, panics       bool
	}{
		{"dim a multiple of 32 on a CPU with the kernel", true, 3, 384, 384, 3 * 384, true, false},
		{"CPU without the kernel: portable", false, 3, 384, 384, 3 * 384, false, false},
		{"dim not a multiple of 32: portable", true, 3, 100, 100, 300, false, false},
		{"no vectors: nothing read", true, 0, 384, 0, 0, true, false},
		{"vectors shorter than n·dim panic", true, 3, 384, 384, 2 * 384, false, true},
		{"query shorter than dim panics", true, 1, 384, 383, 384, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if r := recover(); (r != nil) != tc.panics {
					t.Fatalf("panic %v, want a panic: %v", r, tc.panics)
				}
			}()
			if got := kernelFits(tc.has, tc.n, tc.dim, tc.qLen, tc.vLen); got != tc.want {
				t.Fatalf("kernelFits = %v, want %v", got, tc.want)
			}
		})
	}
}
