//go:build !purego

#include "textflag.h"

// func dotsInt8AVX2(q []int16, codes []int8, dim int, out []int32)
//
// out[v] = Σ_j q[j]·codes[v·dim+j] for v < len(out); dim is a multiple of 32.
TEXT ·dotsInt8AVX2(SB), NOSPLIT, $0-80
	MOVQ q_base+0(FP), SI
	MOVQ codes_base+24(FP), DI
	MOVQ dim+48(FP), DX
	MOVQ out_base+56(FP), R8
	MOVQ out_len+64(FP), R9
	TESTQ R9, R9
	JZ   done

vec:
	VPXOR Y0, Y0, Y0
	VPXOR Y3, Y3, Y3
	XORQ  CX, CX

inner:
	VPMOVSXBW (DI)(CX*1), Y1
	VPMADDWD  (SI)(CX*2), Y1, Y1
	VPADDD    Y1, Y0, Y0
	VPMOVSXBW 16(DI)(CX*1), Y2
	VPMADDWD  32(SI)(CX*2), Y2, Y2
	VPADDD    Y2, Y3, Y3
	ADDQ      $32, CX
	CMPQ      CX, DX
	JL        inner

	VPADDD       Y3, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0x4e, X0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0xb1, X0, X1
	VPADDD       X1, X0, X0
	VMOVD        X0, (R8)
	ADDQ         $4, R8
	ADDQ         DX, DI
	DECQ         R9
	JNZ          vec
	VZEROUPPER

done:
	RET
