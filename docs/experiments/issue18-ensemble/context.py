"""The session context, offline (docs/recall-quality.md, issue 18's session-context round).

Each speaker of each LoCoMo session gets a vector, the unit mean of e5's vectors of the turns they
said in it (recall's projection.ContextPoints, one archive a session as the eval commits them). A
candidate + g × the scaled cosine of the question (as asked, not moved from the names) with the
context of its source turn's speaker in that session, when that context is among the question's
best K of the conversation (recall searches the context points for its best K), else + 0.
Rows: the best in-sample g and g picked on four conversations and scored on the fifth, for K 24,
48 and every context; both speakers of a session in one context; the session's whole
conversation per speaker; and the best K with the attention-mask sub-queries of attnmask.py
(both weights picked per fold).

    TRACE=… DATA_DIR=… LOCOMO=… python context.py
"""
import itertools
import os
import re

import numpy as np

import screen as S
from attnmask import VARIANTS, each_question, per_person
from specifics import held_out

GRID = (0.0, 0.05, 0.1, 0.15, 0.2, 0.3)


def turn_vectors():
    """Every turn's e5 passage vector (cached), the questions' query vectors, and the turns' keys."""
    keys = [(sample['sample_id'], t['dia_id']) for sample in S.data for key, session in sample['conversation'].items()
            if re.fullmatch(r'session_\d+', key) for t in session]
    cache = f'{S.CACHE}/context-turns-e5.npz'
    if os.path.exists(cache):
        z = np.load(cache)
        return z['P'], z['Q'], keys
    embed, qp, pp, _, _ = S.embedder('e5')
    P = embed([pp + S.turn[k] for k in keys])
    Q = embed([qp + line['question'] for line in S.lines])
    np.savez(cache, P=P, Q=Q)
    return P, Q, keys


P, Q, KEYS = turn_vectors()
AT = {k: i for i, k in enumerate(KEYS)}
SPEAKER = {k: S.turn[k].split(':', 1)[0] for k in KEYS}
SHIFT, SCALE = S.MODELS['e5'][4], S.MODELS['e5'][5]


def contexts(group):
    """Context vectors by (conversation, group key), group(turn key) naming a turn's context."""
    members = {}
    for i, k in enumerate(KEYS):
        members.setdefault((k[0], group(k)), []).append(i)
    out = {}
    for key, idx in members.items():
        v = P[idx].mean(0)
        out[key] = v / np.linalg.norm(v)
    return out


def feature(group, top=None):
    """Per question, candidate id -> the scaled cosine of the best context of its source turns."""
    ctx = contexts(group)
    by_conv = {}
    for key in ctx:
        by_conv.setdefault(key[0], []).append(key)
    out = []
    for qi, line in enumerate(S.lines):
        keys = by_conv[line['conv']]
        cos = np.array([ctx[k] @ Q[qi] for k in keys])
        best = {keys[j]: float(cos[j]) for j in np.argsort(-cos)[:top or len(keys)]}
        row = {}
        for e in line['trace']:
            vals = [best[(line['conv'], group((line['conv'], s)))] for s in e.get('sources') or []
                    if (line['conv'], s) in AT and (line['conv'], group((line['conv'], s))) in best]
            if vals:
                row[e['id']] = min(1.0, max(0.0, (max(vals) - SHIFT) * SCALE))
        out.append(row)
    return out


def speaker_in_session(k):
    return (k[1].split(':')[0], SPEAKER[k])


def report(tag, extra):
    g = max(GRID[1:], key=lambda g: S.core(S.table(S.ALL, S.added(extra, g))))
    S.report(f'{tag}, + {g} (in-sample best)', S.table(S.ALL, S.added(extra, g)))
    by, picks = held_out(extra, GRID)
    S.report(f'{tag}, held-out (picks {picks})', by)


def held_out_two(a, b, ga, gb):
    """Both weights picked on four conversations, scored on the fifth."""
    def score_of(g):
        return lambda qi: (lambda e: e['score'] + g[0] * a[qi].get(e['id'], 0.0) + g[1] * b[qi].get(e['id'], 0.0))
    by, picks = {}, []
    for held in sorted({line['conv'] for line in S.lines}):
        train = [qi for qi in S.ALL if S.lines[qi]['conv'] != held]
        test = [qi for qi in S.ALL if S.lines[qi]['conv'] == held]
        g = max(itertools.product(ga, gb), key=lambda g: S.core(S.table(train, score_of(g))))
        picks.append(g)
        for c, vs in S.table(test, score_of(g)).items():
            by.setdefault(c, []).extend(vs)
    return by, picks


if __name__ == '__main__':
    S.report('recall (the trace reproduced)', S.table(S.ALL, lambda qi: None))
    best = {}
    for top in (24, 48, None):
        best[top] = feature(speaker_in_session, top)
        report(f'speaker in session, best {top or "every"} contexts', best[top])
    report('both speakers of a session, every context', feature(lambda k: k[1].split(':')[0]))
    report('speaker in the whole conversation', feature(lambda k: SPEAKER[k]))
    mask = each_question('attnmask-person1-e5', per_person(list(VARIANTS.values())[1]))
    by, picks = held_out_two(best[48], mask, (0.0, 0.05, 0.1, 0.15), (0.0, 0.4, 0.6, 0.8, 1.0))
    S.report(f'best 48 + attention-mask sub-queries, held-out (picks {picks})', by)
