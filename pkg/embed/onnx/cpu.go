package onnx

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"golang.org/x/sys/cpu"
)

// CPU names the processor a model runs on here: its model name, its logical cores and the
// best int8 matrix instructions it has ("AMD EPYC, 2 cores, int8: AVX-512 VNNI").
// ONNX Runtime picks its int8 matrix kernels by those instructions, and an int8 model's vectors
// differ in their last digits from one kernel to another: two ingests repeat on one machine,
// while a machine with other instructions ranks a few candidates differently
// (docs/recall-quality.md). So an eval or a bench names the CPU beside its figures.
func CPU() string {
	model := ""
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		model = cpuModel(f)
		_ = f.Close() // read-only
	}
	if model == "" {
		model = runtime.GOARCH
	}
	return fmt.Sprintf("%s, %d cores, int8: %s", model, runtime.NumCPU(), int8Instructions())
}

// cpuModel is the first model name in a /proc/cpuinfo ("model name" on x86, "Model" on some
// ARM boards), or "".
func cpuModel(r io.Reader) string {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(key) {
		case "model name", "Model":
			if v := strings.TrimSpace(value); v != "" {
				return v
			}
		}
	}
	return ""
}

// int8Instructions is the best of the instruction sets ONNX Runtime has int8 matrix kernels
// for that this CPU has, in the order the runtime prefers them (AMX, then VNNI, then the
// multiply-adds of AVX-512BW and AVX2, whose 16-bit sums can saturate).
func int8Instructions() string {
	switch {
	case cpu.X86.HasAMXInt8:
		return "AMX"
	case cpu.X86.HasAVX512VNNI:
		return "AVX-512 VNNI"
	case cpu.X86.HasAVXVNNI:
		return "AVX-VNNI"
	case cpu.X86.HasAVX512BW:
		return "AVX-512BW"
	case cpu.X86.HasAVX2:
		return "AVX2"
	case cpu.ARM64.HasASIMDDP:
		return "NEON dot product"
	case cpu.ARM64.HasASIMD:
		return "NEON"
	default:
		return "none of AVX2, AVX-512, VNNI or NEON"
	}
}
