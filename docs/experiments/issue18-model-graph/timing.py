"""Time one query at a time through ONNX models, as recall runs its model.

Two intra-op threads, no spinning (pkg/embed/onnx), "query: " + the first 150 questions of the
LoCoMo dev split; three passes per round, two rounds, every model in turn. Prints the median and
p99 ms per model and round, each vector's cosine to the first model's, and the operators.

usage: python timing.py VOCAB.txt LOCOMO.json MODEL.onnx [MODEL.onnx ...]
"""
import collections
import json
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from tokenizers import BertWordPieceTokenizer

vocab, data, models = sys.argv[1], sys.argv[2], sys.argv[3:]
tok = BertWordPieceTokenizer(vocab, lowercase=True)
qs = [q["question"] for c in json.load(open(data)) for q in c["qa"]][:150]
enc = [tok.encode("query: " + q).ids for q in qs]
print("mean tokens", np.mean([len(e) for e in enc]))


def session(path):
    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = 2, 1
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.add_session_config_entry("session.inter_op.allow_spinning", "0")
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def run(s, ids):
    a = np.array([ids], dtype=np.int64)
    feed = {"input_ids": a, "attention_mask": np.ones_like(a)}
    if "token_type_ids" in [i.name for i in s.get_inputs()]:
        feed["token_type_ids"] = np.zeros_like(a)
    v = s.run(None, feed)[0][0].mean(0)
    return v / np.linalg.norm(v)


def timed(s):
    for e in enc[:10]:
        run(s, e)
    ts = []
    for _ in range(3):
        for e in enc:
            t = time.perf_counter()
            run(s, e)
            ts.append(time.perf_counter() - t)
    ts = np.array(ts) * 1000
    return np.median(ts), np.percentile(ts, 99)


S = {m: session(m) for m in models}
V = {m: np.array([run(S[m], e) for e in enc]) for m in models}
for rnd in range(2):
    for m in models:
        print(rnd, m, "p50 %.2f p99 %.2f" % timed(S[m]), flush=True)
for m in models[1:]:
    c = np.sum(V[m] * V[models[0]], 1)
    print(m, "cosine to", models[0], "mean %.4f min %.4f" % (c.mean(), c.min()))
for m in models:
    print(m, dict(collections.Counter(n.op_type for n in onnx.load(m).graph.node).most_common(12)))
