package config

import (
	"testing"
	"time"
)

func TestFormatDuration(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    time.Duration
		want string
	}{
		{"whole minutes drop the seconds", 30 * time.Minute, "30m"},
		{"whole hours drop minutes and seconds", 2 * time.Hour, "2h"},
		{"seconds stay", 90 * time.Second, "1m30s"},
		{"zero is 0s", 0, "0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := formatDuration(tc.d)
			if got != tc.want {
				t.Fatalf("formatDuration(%s) = %q, want %q", tc.d, got, tc.want)
			}
			if back, err := time.ParseDuration(got); err != nil || back != tc.d {
				t.Fatalf("%q parses back as %s, %v; want %s", got, back, err, tc.d)
			}
		})
	}
}
