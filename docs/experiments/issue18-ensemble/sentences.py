"""Sentence vectors for archive turns: dense-only retrieval over every turn of each
conversation with e5-small-v2, a turn scored by its whole text, its best sentence, or both;
then the trace re-ranked with an archive candidate's dense part moved to the mixed cosine.

    python sentences.py
"""
import os
import re

import numpy as np

import screen as s

embed, qp, pp, shift, scale = s.embedder('e5')
turns = []  # (conversation, dia_id, whole text, its sentences), each "Speaker: …"
for sample in s.data:
    for key, session in sample['conversation'].items():
        if re.fullmatch(r'session_\d+', key):
            for t in session:
                sents = [x for x in re.split(r'(?<=[.!?])\s+', t['text']) if len(x.strip()) > 3]
                parts = [f"{t['speaker']}: {x}" for x in sents]
                if t.get('blip_caption'):
                    parts.append(f"{t['speaker']} shares {t['blip_caption']}")
                turns.append((sample['sample_id'], t['dia_id'], f"{t['speaker']}: {t['text']}", parts))
cache = f'{s.CACHE}/sentences-e5.npz'
if os.path.exists(cache):
    z = np.load(cache)
    W, S = z['W'], z['S']
else:
    W = embed([pp + t[2] for t in turns])
    S = embed([pp + p for t in turns for p in t[3]])
    np.savez(cache, W=W, S=S)
owner = [i for i, t in enumerate(turns) for _ in t[3]]
Q = embed([qp + line['question'] for line in s.lines])
by_conv = {}
for i, t in enumerate(turns):
    by_conv.setdefault(t[0], []).append(i)


def scored(qi):
    """dia_id -> (whole cosine, best sentence cosine) for the question's conversation."""
    line = s.lines[qi]
    whole = {turns[i][1]: float(W[i] @ Q[qi]) for i in by_conv[line['conv']]}
    best = {}
    sims = S @ Q[qi]
    for j, i in enumerate(owner):
        if turns[i][0] == line['conv']:
            best[turns[i][1]] = max(best.get(turns[i][1], -1.0), float(sims[j]))
    return {d: (w, best.get(d, w)) for d, w in whole.items()}


MIX = {'whole': lambda w, b: w, 'best sentence': lambda w, b: b,
       'max(whole, sentence)': max, 'mean(whole, sentence)': lambda w, b: (w + b) / 2}
cos = [scored(qi) for qi in s.ALL]
print('dense alone over every archive turn, R@10 / R@24 / R@48 by category 1/2/3/4/5:')
for name, mix in MIX.items():
    by = {}
    for qi, line in enumerate(s.lines):
        order = sorted(cos[qi], key=lambda d: -mix(*cos[qi][d]))
        evidence = [x for x in line['evidence'] if x]
        for k in (10, 24, 48):
            if evidence:
                top = set(order[:k])
                by.setdefault((k, line['category']), []).append(sum(x in top for x in evidence) / len(evidence))
    print(f'  {name:22s}', '  '.join(f'R@{k} ' + '/'.join(f'{np.mean(by[(k, c)]):.3f}' for c in (1, 2, 3, 4, 5)) for k in (10, 24, 48)))

unit = lambda c: min(1.0, max(0.0, (c - shift) * scale))
s.report('recall (the trace reproduced)', s.table(s.ALL, lambda qi: None))
for name in ('max(whole, sentence)', 'mean(whole, sentence)'):
    delta = [{e['id']: 0.7 * (unit(MIX[name](*cos[qi][e['sources'][0]])) - unit(cos[qi][e['sources'][0]][0]))
              for e in line['trace'] if e['scope'] == 'archive' and e.get('sources') and e['sources'][0] in cos[qi]}
             for qi, line in enumerate(s.lines)]
    for a in (0.5, 1.0, 1.5):
        s.report(f'archive dense → {name} ×{a}', s.table(s.ALL, s.added(delta, a)))
