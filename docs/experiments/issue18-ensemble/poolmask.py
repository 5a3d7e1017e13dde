"""Sub-queries from one model run, offline (docs/recall-quality.md, issue 18's pooling round).

The sub-query round asked a question that names two of the conversation's speakers once per
person, one model run each. Here the question runs once and its token vectors are mean-pooled
twice more, each time leaving out the other person's name's tokens: a vector per person at no
extra model run (the tokens still saw the other name; only the pooling forgets it).

1. per person: each candidate + g × (the better person's scaled e5 cosine − the question's), as
   subqueries.py's second screen, with the pooled vectors in place of the sub-queries' runs.
2. names-blind: every question with a capitalised word after its first (as recall's queryNames):
   the question pooled without those words' tokens, + g × (its scaled cosine − the trace's dense part).

Rows: in-sample for a few g, then g picked on four conversations and scored on the fifth.

    TRACE=… DATA_DIR=… LOCOMO=… python poolmask.py
"""
import json
import os
import re

import numpy as np
import onnxruntime as ort
from tokenizers import BertWordPieceTokenizer

import screen as S
from specifics import held_out
from subqueries import named

NAME = re.compile(r"\b[A-Z][a-z]+\b")


def token_vectors(name):
    """run(text): its token vectors and their offsets, one model run of batch 1; and screen's embed."""
    d = S.MODELS[name][0]
    embed, *_ = S.embedder(name)
    tok = BertWordPieceTokenizer(f'{d}/vocab.txt', lowercase=True)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(f'{d}/model.onnx', opts)
    inputs = {i.name for i in sess.get_inputs()}

    def run(text):
        enc = tok.encode(text)
        ids = np.array([enc.ids], dtype=np.int64)
        feed = {'input_ids': ids, 'attention_mask': np.ones_like(ids)}
        if 'token_type_ids' in inputs:
            feed['token_type_ids'] = np.zeros_like(ids)
        return sess.run(None, feed)[0][0], enc.offsets
    return run, embed


def pooled(h, offsets, text, drop):
    """h mean-pooled over the tokens that do not fall in any of the words drop names."""
    spans = [m.span() for w in drop for m in re.finditer(rf"\b{re.escape(w)}\b", text)]
    keep = [i for i, (a, b) in enumerate(offsets)
            if not any(a < e and b > s for s, e in spans if b > a)]
    v = h[keep].mean(0)
    return v / np.linalg.norm(v)


def candidate_vectors(embed, pp):
    """Every candidate text's e5 vector, embedded once (cached)."""
    cache = f'{S.CACHE}/poolmask-cands-e5.npz'
    texts = sorted({t for line in S.lines for e in line['trace'] if (t := S.cand_text(line['conv'], e))})
    if os.path.exists(cache):
        P = np.load(cache)['P']
    else:
        P = embed([pp + t for t in texts])
        np.savez(cache, P=P)
    return P, {t: i for i, t in enumerate(texts)}


def features():
    cache = f'{S.CACHE}/poolmask-e5.json'
    if os.path.exists(cache):
        return json.load(open(cache))
    run, embed = token_vectors('e5')
    _, _, qp, pp, shift, scale = S.MODELS['e5']
    sc = lambda P, v: np.clip((P @ v - shift) * scale, 0, 1)
    allP, at = candidate_vectors(embed, pp)
    person, blind = [], []
    for line in S.lines:
        prow, brow = {}, {}
        names = named(line)
        others = NAME.findall(line['question'].split(None, 1)[1]) if ' ' in line['question'] else []
        if len(names) >= 2 or others:
            ents = [e for e in line['trace'] if S.cand_text(line['conv'], e)]
            P = allP[[at[S.cand_text(line['conv'], e)] for e in ents]]
            text = qp + line['question']
            h, off = run(text)
            q = pooled(h, off, text, [])
            if len(names) >= 2:
                a, b = pooled(h, off, text, [names[1]]), pooled(h, off, text, [names[0]])
                f = np.maximum(sc(P, a), sc(P, b)) - sc(P, q)
                prow = {e['id']: float(f[i]) for i, e in enumerate(ents)}
            if others:
                nb = sc(P, pooled(h, off, text, others))
                brow = {e['id']: float(nb[i] - e['parts']['dense']) for i, e in enumerate(ents)}
        person.append(prow)
        blind.append(brow)
    json.dump([person, blind], open(cache, 'w'))
    return person, blind


if __name__ == '__main__':
    S.report('recall (the trace reproduced)', S.table(S.ALL, lambda qi: None))
    person, blind = features()
    for tag, extra, grid in (('per person, pooled', person, (0.4, 1.0, 4, 16)),
                             ('names-blind, pooled', blind, (0.1, 0.2, 0.3, 0.5))):
        print(f'{tag}: {sum(1 for r in extra if r)} questions')
        for g in grid:
            S.report(f'{tag} + {g}', S.table(S.ALL, S.added(extra, g)))
        by, picks = held_out(extra, grid=(0.0,) + grid)
        S.report(f'{tag}, held-out (picks {picks})', by)
