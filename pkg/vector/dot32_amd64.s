//go:build !purego

#include "textflag.h"

// func dots32AVX2(q []float32, vecs []float32, dim int, out []float32)
//
// out[v] = Σ_j q[j]·vecs[v·dim+j] for v < len(out); dim is a multiple of 32. Four FMA
// accumulators of 8 lanes each, summed at the end of each vector.
TEXT ·dots32AVX2(SB), NOSPLIT, $0-80
	MOVQ q_base+0(FP), SI
	MOVQ vecs_base+24(FP), DI
	MOVQ dim+48(FP), DX
	MOVQ out_base+56(FP), R8
	MOVQ out_len+64(FP), R9
	TESTQ R9, R9
	JZ   done
	MOVQ DX, R10
	SHLQ $2, R10

vec:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ   CX, CX

inner:
	VMOVUPS     (DI)(CX*4), Y4
	VMOVUPS     32(DI)(CX*4), Y5
	VMOVUPS     64(DI)(CX*4), Y6
	VMOVUPS     96(DI)(CX*4), Y7
	VFMADD231PS (SI)(CX*4), Y4, Y0
	VFMADD231PS 32(SI)(CX*4), Y5, Y1
	VFMADD231PS 64(SI)(CX*4), Y6, Y2
	VFMADD231PS 96(SI)(CX*4), Y7, Y3
	ADDQ        $32, CX
	CMPQ        CX, DX
	JL          inner

	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VPERMILPS    $0x4e, X0, X1
	VADDPS       X1, X0, X0
	VPERMILPS    $0xb1, X0, X1
	VADDSS       X1, X0, X0
	VMOVSS       X0, (R8)
	ADDQ         $4, R8
	ADDQ         R10, DI
	DECQ         R9
	JNZ          vec
	VZEROUPPER

done:
	RET
