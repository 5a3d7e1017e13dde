package main

import "testing"

func TestJudge(t *testing.T) {
	rep := func(v, n int) []int {
		s := make([]int, n)
		for i := range s {
			s[i] = v
		}
		return s
	}
	spike := append(rep(136, 10), 171) // CI's goroutine samples: one taken mid-commit
	tests := []struct {
		name        string
		first, last []int
		tol         float64
		slack       int
		flat        bool
		limit       int
	}{
		{"steady", rep(136, 11), rep(136, 11), 0.10, 10, true, 159},
		{"one spike in the last third", rep(141, 11), spike, 0.10, 10, true, 165},
		{"spike in the first third does not raise the limit", spike, rep(170, 11), 0.10, 10, false, 159},
		{"steady leak", []int{100, 101, 102, 103, 104}, []int{140, 141, 142, 143, 144}, 0.10, 10, false, 122},
		{"open files: no tolerance", []int{26, 26, 27}, []int{34, 35, 35}, 0, 8, false, 34},
		{"open files at the limit", []int{26, 26, 27}, []int{33, 34, 35}, 0, 8, true, 34},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := judge(tt.first, tt.last, tt.tol, tt.slack)
			if v.flat != tt.flat || v.limit != tt.limit {
				t.Fatalf("judge = %+v, want flat=%v limit=%d", v, tt.flat, tt.limit)
			}
		})
	}
}
