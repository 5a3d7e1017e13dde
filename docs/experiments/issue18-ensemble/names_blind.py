"""The question without its names (its capitalised words after the first), embedded with
e5-small-v2: a candidate's score + a × its own dense part + b × its cosine with that query, on
the trace's candidates; the grid, then held-out (leave one conversation out).

    python names_blind.py       # needs mmr.py's vector cache (run mmr.py first)
"""
import json
import os
import re

import numpy as np

import screen as s

def blind(q):
    w = q.split()
    return ' '.join([w[0]] + [x for x in w[1:] if not re.match(r"^[A-Z][a-z]", x)])

cache = f'{s.CACHE}/cos-e5-blind.json'
if os.path.exists(cache):
    B = json.load(open(cache))
else:
    embed, qp, pp, shift, scale = s.embedder('e5')
    texts = sorted({t for l in s.lines for e in l['trace'] if (t := s.cand_text(l['conv'], e))})
    at = {t: i for i, t in enumerate(texts)}
    P = np.load(f'{s.CACHE}/vec-e5.npz')['P']
    Q = embed([qp + blind(l['question']) for l in s.lines])
    B = []
    for qi, l in enumerate(s.lines):
        B.append({e['id']: min(1.0, max(0.0, (float(P[at[t]] @ Q[qi]) - shift) * scale)) for e in l['trace'] if (t := s.cand_text(l['conv'], e))})
    json.dump(B, open(cache, 'w'))
E = s.cosines('e5')
own = [{e['id']: e['parts']['dense'] for e in l['trace']} for l in s.lines]
print(blind(s.lines[0]['question']))
s.report('recall', s.table(s.ALL, lambda qi: None))
def comb(a, b, mode):
    def f(qi):
        def g(e):
            o, x = own[qi].get(e['id'], 0), B[qi].get(e['id'], 0)
            if mode == 'max': return e['score'] + a * max(o, x)
            return e['score'] + a * o + b * x
        return g
    return f
for a in (0.3, 0.5):
    s.report(f'+{a} max(own, blind)', s.table(s.ALL, comb(a, 0, 'max')))
for a, b in ((0, 0.3), (0, 0.5), (0.3, 0.2), (0.5, 0.2), (0.5, 0.5), (0.3, 0.5), (0.2, 0.3)):
    s.report(f'+{a} own +{b} blind', s.table(s.ALL, comb(a, b, 'sum')))
print('--- grid')
grid = [(a, b) for a in (0, 0.1, 0.2, 0.3, 0.4, 0.5) for b in (0.2, 0.3, 0.5, 0.7, 1.0)]
res = {}
for a, b in grid:
    res[(a, b)] = s.table(s.ALL, comb(a, b, 'sum'))
for (a, b), by in sorted(res.items(), key=lambda x: -np.mean(x[1][1]))[:12]:
    s.report(f'+{a} own +{b} blind', by)
print('--- held-out')
convs = sorted({l['conv'] for l in s.lines})
for objective in ('1-4', '1-5'):
    allby, picks = {}, []
    for held in convs:
        tr = [i for i in s.ALL if s.lines[i]['conv'] != held]
        te = [i for i in s.ALL if s.lines[i]['conv'] == held]
        def obj(ab):
            by = s.table(tr, comb(ab[0], ab[1], 'sum'))
            cats = (1, 2, 3, 4) if objective == '1-4' else (1, 2, 3, 4, 5)
            return np.mean([v for c in cats for v in by.get(c, [])])
        best = max([(0, 0)] + grid, key=obj)
        picks.append(best)
        for c, vs in s.table(te, comb(best[0], best[1], 'sum')).items():
            allby.setdefault(c, []).extend(vs)
    s.report(f'held-out on {objective} {picks}', allby)
