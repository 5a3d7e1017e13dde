package onnx

import (
	"strings"
	"testing"
)

func TestCPUModel(t *testing.T) {
	tests := []struct {
		name, cpuinfo, want string
	}{
		{"x86", "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\nflags\t\t: fpu avx2\n\nprocessor\t: 1\nmodel name\t: AMD EPYC\n", "AMD EPYC"},
		{"arm board", "processor\t: 0\nFeatures\t: fp asimd\n\nHardware\t: BCM2835\nModel\t\t: Raspberry Pi 4 Model B Rev 1.4\n", "Raspberry Pi 4 Model B Rev 1.4"},
		{"empty model name skipped", "model name\t:\nmodel name\t: Intel(R) Xeon(R) CPU\n", "Intel(R) Xeon(R) CPU"},
		{"none", "processor\t: 0\nBogoMIPS\t: 50.00\n", ""},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := cpuModel(strings.NewReader(tt.cpuinfo)); got != tt.want {
				t.Errorf("cpuModel = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCPUNamesTheInstructions(t *testing.T) {
	got := CPU()
	if !strings.Contains(got, ", int8: "+int8Instructions()) || !strings.Contains(got, " cores, ") {
		t.Errorf("CPU() = %q, want the model, the cores and %q", got, int8Instructions())
	}
}
