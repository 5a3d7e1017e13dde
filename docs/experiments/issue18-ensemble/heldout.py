"""Held-out (leave one conversation out) versions of screen.py's additions, and a LambdaMART
ranker over the trace's features and the three models' cosines.

    python heldout.py            # + a × cosine(s), a chosen on the other four conversations
    python heldout.py ltr        # LightGBM lambdarank, trained on the other four
"""
import os
import sys

import numpy as np

import screen as s

GRID = (0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5)
convs = sorted({line['conv'] for line in s.lines})


def folds():
    for held in convs:
        yield ([i for i in s.ALL if s.lines[i]['conv'] != held],
               [i for i in s.ALL if s.lines[i]['conv'] == held])


def held_out(extra, grid):
    """Per category R@10 of the trace's score + a × extra, a picked from grid on four
    conversations and scored on the fifth; and the a of each fold."""
    by, picks = {}, []
    for train, test in folds():
        a = max(grid, key=lambda a: s.core(s.table(train, s.added(extra, a))))
        picks.append(a)
        for c, vs in s.table(test, s.added(extra, a)).items():
            by.setdefault(c, []).extend(vs)
    return by, picks


def summed(names):
    cos = {n: s.cosines(n) for n in names}
    return [{k: sum(cos[n][qi].get(k, 0.0) for n in names) for k in cos[names[0]][qi]} for qi in s.ALL]


def linear():
    own = [{e['id']: e['parts']['dense'] for e in line['trace']} for line in s.lines]
    for tag, extra in [('own dense', own)] + [('+'.join(ns), summed(ns)) for ns in
                                              (['minilm'], ['bge'], ['e5'], ['bge', 'e5'], ['minilm', 'bge'], ['minilm', 'bge', 'e5'])]:
        by, picks = held_out(extra, GRID)
        s.report(f'held-out + a × {tag} (a {picks})', by)


def ltr(names, trees=200, leaves=15):
    import lightgbm as lgb
    cos = {n: s.cosines(n) for n in names}

    def features(qi):
        line = s.lines[qi]
        evidence = set(line['evidence'])
        X, y, ids = [], [], []
        for r, e in enumerate(sorted(line['trace'], key=lambda e: -e['score'])):
            p, t = e['parts'], s.cand_text(line['conv'], e) or ''
            kind = 0 if e['id'] in s.memory else (1 if e['scope'] == 'archive' else 2)
            X.append([e['score'], p['dense'], p['keyword'], p['fused'], p['boost'], kind, r, len(t),
                      t.split('\n')[0].rstrip().endswith('?'), len(e.get('sources') or [])] +
                     [cos[n][qi].get(e['id'], 0.0) for n in names])
            y.append(int(bool(evidence & set(e.get('sources') or []))))
            ids.append(e['id'])
        return X, y, ids
    F = [features(qi) for qi in s.ALL]
    predicted = {}
    for train, test in folds():
        train = [i for i in train if F[i][0]]
        m = lgb.LGBMRanker(n_estimators=trees, learning_rate=0.05, num_leaves=leaves, min_child_samples=20, verbose=-1)
        m.fit(np.array([x for i in train for x in F[i][0]], dtype=float),
              np.array([v for i in train for v in F[i][1]]), group=[len(F[i][0]) for i in train])
        for i in test:
            if F[i][0]:
                predicted[i] = dict(zip(F[i][2], m.predict(np.array(F[i][0], dtype=float))))
    by = s.table(s.ALL, lambda qi: (lambda e: predicted.get(qi, {}).get(e['id'], e['score'])))
    s.report(f'held-out lambdarank {"+".join(names) or "trace only"} ({trees} trees, {leaves} leaves)', by)


if __name__ == '__main__':
    s.report('recall (the trace reproduced)', s.table(s.ALL, lambda qi: None))
    if sys.argv[1:2] == ['ltr']:
        for names, trees, leaves in (([], 200, 15), (['e5'], 200, 15), (['minilm', 'bge'], 200, 15),
                                     (['minilm', 'bge', 'e5'], 200, 15), (['minilm', 'bge', 'e5'], 100, 7),
                                     (['minilm', 'bge', 'e5'], 400, 31)):
            ltr(names, trees, leaves)
    else:
        linear()
