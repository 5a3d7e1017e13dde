"""Leave-one-conversation-out choice among online runs: each run a `membus eval locomo
--data-dir DIR --trace-out GRID/NAME.jsonl` of one setting, on one ingest; recall's ranking
re-read from each trace (as screen.py does), the setting chosen on four conversations and
scored on the fifth.

    GRID=/tmp/grid python grid_cv.py
"""
import json, itertools, numpy as np, glob, os
CATS = {1: 'multi-hop', 2: 'temporal', 3: 'open-domain', 4: 'single-hop', 5: 'adversarial'}
def rank(line):
    covered, out = set(), []
    for e in sorted(line['trace'], key=lambda e: (-e['score'], e['id'])):
        if e['score'] < 0.15: continue
        if len(out) >= 10: break
        src = e.get('sources') or []
        if src and all(x in covered for x in src): continue
        covered.update(src); out.append(src)
    return out
def r10(line):
    ev = [x for x in line['evidence'] if x]
    if not ev: return None
    got = set(itertools.chain.from_iterable(rank(line)))
    return sum(x in got for x in ev) / len(ev)
R = {}
for f in sorted(glob.glob(os.path.join(os.environ.get('GRID', '/tmp/grid'), '*.jsonl'))):
    t = os.path.basename(f)[:-6]
    R[t] = [(l['conv'], l['category'], r10(l)) for l in map(json.loads, open(f))]
def agg(rows, cats):
    v = [x for c, k, x in rows if k in cats and x is not None]
    return np.mean(v)
def line(t, rows):
    return f"{t:10s} 1-4 {agg(rows,(1,2,3,4)):.4f} " + ' '.join(f"{CATS[c]} {agg(rows,(c,)):.3f}" for c in (1,2,3,4,5))
for t, rows in R.items(): print(line(t, rows))
convs = sorted({c for c, _, _ in R['b0o0']})
for obj in ((1,2,3,4), (1,2,3,4,5)):
    out, picks = [], []
    for held in convs:
        best = max(R, key=lambda t: agg([r for r in R[t] if r[0] != held], obj))
        picks.append(best)
        out += [r for r in R[best] if r[0] == held]
    print('held-out on', obj, picks); print(line('held-out', out))
# per conversation, best config vs base
for t in [t for t in R if t != 'b0o0']:
    print(f'{t:10s}', ' '.join(f"{c}:{agg([r for r in R[t] if r[0]==c],(1,2,3,4))-agg([r for r in R['b0o0'] if r[0]==c],(1,2,3,4)):+.3f}" for c in convs))
