"""MMR over recall's best candidates with e5-small-v2 vectors (similarity scaled as recall
scales a cosine): the top LIMIT picked greedily by λ × score − (1 − λ) × the best similarity to
an item already picked, from the first `pool` candidates; the rest follow in score order.

    python mmr.py
"""
import os

import numpy as np

import screen as s

cache = f'{s.CACHE}/vec-e5.npz'
texts = sorted({t for line in s.lines for e in line['trace'] if (t := s.cand_text(line['conv'], e))})
if os.path.exists(cache):
    P = np.load(cache)['P']
else:
    embed, qp, pp, _, _ = s.embedder('e5')
    P = embed([pp + t for t in texts]); np.savez(cache, P=P)
at = {t: i for i, t in enumerate(texts)}

def mmr_rank(line, lam, pool, sess_only=False):
    es = sorted(line['trace'], key=lambda e: (-e['score'], e['id']))
    es = [e for e in es if e['score'] >= s.THRESHOLD]
    head, tail = es[:pool], es[pool:]
    vec = [P[at[t]] if (t := s.cand_text(line['conv'], e)) else None for e in head]
    chosen, out, covered = [], [], set()
    left = list(range(len(head)))
    while left and len(out) < s.LIMIT:
        def val(i):
            sim = max((min(1.0, max(0.0, (float(vec[i] @ vec[j]) - 0.711) * 4.24)) for j in chosen if vec[i] is not None and vec[j] is not None), default=0.0)
            return lam * head[i]['score'] - (1 - lam) * sim
        i = max(left, key=val); left.remove(i)
        src = head[i].get('sources') or []
        if src and all(x in covered for x in src):
            continue
        chosen.append(i); covered.update(src); out.append(src)
    for e in tail:
        if len(out) >= s.LIMIT: break
        src = e.get('sources') or []
        if src and all(x in covered for x in src): continue
        covered.update(src); out.append(src)
    return out

s.report('recall', s.table(s.ALL, lambda qi: None))
for pool in (20, 30):
    for lam in (0.9, 0.8, 0.7, 0.6, 0.5):
        by = {}
        for line in s.lines:
            v = s.r10(line, mmr_rank(line, lam, pool))
            if v is not None: by.setdefault(line['category'], []).append(v)
        s.report(f'dense MMR pool {pool} λ {lam}', by)
