"""Per-person queries from the names' cached vectors, offline (docs/recall-quality.md, issue 18's
arithmetic round).

The attention-mask sub-queries (attnmask.py) gave the best held-out multi-hop of any round, with
the session context on top of it, but at a second model run of three rows. Recall already embeds
every name a question mentions, alone and once (the names' move; the embedding cache keeps each
name), so a question that names two of the conversation's speakers could have a query per
person without any model run: the question's vector moved away from the other person's name
only, q_A = unit(q − κ·n_B). Each candidate + g × (the better person's scaled e5 cosine − the
question's), as attnmask.py scores its rows.

Rows: in-sample for a few g at each κ, then g (and κ) picked on four conversations and scored on
the fifth; how many candidates' person rows the move puts at 0 (the scale clips them); variants
(each candidate by its own speaker's row, the rows' mean, "both" and "and" moved away from as well,
the own name at recall's 0.15 too, the trace's dense part as the base); and, on the same trace,
the attention-mask rows for comparison.

    TRACE=… DATA_DIR=… LOCOMO=… CACHE=… python personarith.py
"""
import itertools
import json
import os

import numpy as np

import screen as S
from attnmask import VARIANTS, each_question, per_person
from poolmask import candidate_vectors
from specifics import held_out
from subqueries import named

KAPPAS = (0.15, 0.3, 0.5, 0.8)
GRID = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)


def features():
    """Per κ (and per variant), per question, candidate id -> the better person's scaled cosine
    less the question's; and per κ the share of candidates whose better person row is 0."""
    cache = f'{S.CACHE}/personarith-e5.json'
    if os.path.exists(cache):
        z = json.load(open(cache))
        return {float(k) if k[0].isdigit() else k: v for k, v in z['feats'].items()}, z['clipped']
    embed, qp, pp, shift, scale = S.embedder('e5')
    allP, at = candidate_vectors(embed, pp)
    names = sorted({n for line in S.lines for n in named(line)} | {'both', 'and'})
    # Each alone, as recall embeds a name: an int8 model's vector moves with its batch.
    N = {n: embed([qp + n])[0] for n in names}
    variants = ('own speaker, κ 0.5', 'mean of the rows, κ 0.5', '"both" and "and" too, κ 0.3',
                'own name at 0.15 too, κ 0.5', 'the trace\'s dense part as the base, κ 0.5')
    out = {k: [] for k in KAPPAS + variants}
    zeros, total = dict.fromkeys(KAPPAS, 0), 0
    for line in S.lines:
        who = named(line)
        if len(who) < 2:
            for k in out:
                out[k].append({})
            continue
        ents = [e for e in line['trace'] if S.cand_text(line['conv'], e)]
        P = allP[[at[S.cand_text(line['conv'], e)] for e in ents]]
        q = embed([qp + line['question']])[0]

        def sc(v):
            return np.clip((P @ (v / np.linalg.norm(v)) - shift) * scale, 0, 1)

        def row(a, base):
            return {e['id']: float(a[i] - base[i]) for i, e in enumerate(ents)}

        base = sc(q)
        total += len(ents)
        for k in KAPPAS:
            best = np.maximum(sc(q - k * N[who[1]]), sc(q - k * N[who[0]]))
            zeros[k] += int((best == 0).sum())
            out[k].append(row(best, base))
        a, b = sc(q - 0.5 * N[who[1]]), sc(q - 0.5 * N[who[0]])
        speaker = [S.cand_text(line['conv'], e).split(':', 1)[0] if e['id'] not in S.memory else None for e in ents]
        own = np.array([a[i] if s == who[0] else b[i] if s == who[1] else max(a[i], b[i]) for i, s in enumerate(speaker)])
        out[variants[0]].append(row(own, base))
        out[variants[1]].append(row((a + b) / 2, base))
        fw = N['both'] + N['and']
        out[variants[2]].append(row(np.maximum(sc(q - 0.3 * (N[who[1]] + fw)), sc(q - 0.3 * (N[who[0]] + fw))), base))
        out[variants[3]].append(row(np.maximum(sc(q - 0.15 * N[who[0]] - 0.5 * N[who[1]]),
                                               sc(q - 0.15 * N[who[1]] - 0.5 * N[who[0]])), base))
        out[variants[4]].append(row(np.maximum(a, b), [e['parts']['dense'] for e in ents]))
    clipped = {str(k): zeros[k] / total for k in KAPPAS}
    json.dump({'feats': {str(k): v for k, v in out.items()}, 'clipped': clipped}, open(cache, 'w'))
    return out, clipped


def held_out_kappa(feats):
    """κ and g both picked on four conversations, scored on the fifth."""
    by, picks = {}, []
    for held in sorted({line['conv'] for line in S.lines}):
        train = [qi for qi in S.ALL if S.lines[qi]['conv'] != held]
        test = [qi for qi in S.ALL if S.lines[qi]['conv'] == held]
        k, g = max(itertools.product(KAPPAS, GRID), key=lambda kg: S.core(S.table(train, S.added(feats[kg[0]], kg[1]))))
        picks.append((k, g))
        for c, vs in S.table(test, S.added(feats[k], g)).items():
            by.setdefault(c, []).extend(vs)
    return by, picks


if __name__ == '__main__':
    S.report('recall (the trace reproduced)', S.table(S.ALL, lambda qi: None))
    feats, clipped = features()
    print(f'{sum(1 for r in feats[KAPPAS[0]] if r)} questions name two speakers')
    for k in KAPPAS:
        print(f'κ {k}: the better person row is 0 for {clipped[str(k)]:.0%} of their candidates')
    for k in KAPPAS:
        for g in GRID[1:]:
            S.report(f'  κ {k}, + {g}', S.table(S.ALL, S.added(feats[k], g)))
        by, picks = held_out(feats[k], grid=GRID)
        S.report(f'  κ {k}, held-out (picks {picks})', by)
    for v in (k for k in feats if isinstance(k, str)):
        by, picks = held_out(feats[v], grid=GRID)
        S.report(f'{v}, held-out (picks {picks})', by)
    by, picks = held_out_kappa(feats)
    S.report(f'κ and g held-out (picks {picks})', by)
    mask = each_question('attnmask-person1-e5', per_person(list(VARIANTS.values())[1]))
    for g in GRID[1:]:
        S.report(f'  attention mask, + {g}', S.table(S.ALL, S.added(mask, g)))
    by, picks = held_out(mask, grid=GRID)
    S.report(f'attention mask, held-out (picks {picks})', by)
