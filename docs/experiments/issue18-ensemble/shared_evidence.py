"""Two re-rankings of recall's own candidates from evidence they share, offline
(docs/recall-quality.md, issue 18's shared-evidence round).

Both add to a candidate's score a share of the scores of the other candidates it shares
something with, and need no model run:

- the same message (CombMAX / CombSUM data fusion): a message recall finds as a memory, as its
  archive turn and in a digest is found by more than one representation of it, so each of
  them gets a × the best ("max") or the sum ("sum") of the others' scores that state one of
  its messages; "cross" counts only candidates of the other scope (a memory's archive turn);
- the same session (a session prior): a turn from a session where recall finds much is more
  likely the evidence, so each candidate gets a × the best ("max") or the mean ("mean") score
  of the other candidates from its sessions, or a × their count ("count", at most 10, / 10);
  a < 0 is the opposite (a spread over sessions, as a list question's evidence often is).

Rows: in-sample at each a, then a picked on four conversations and scored on the fifth
(heldout.py's folds).

    TRACE=… DATA_DIR=… LOCOMO=… CACHE=… python shared_evidence.py
"""
import numpy as np

import heldout as h
import screen as s


def sources(e):
    return set(e.get('sources') or [])


def same_message(mode):
    """extra[qi][id]: the best or summed score of the other candidates stating one of its messages."""
    out = []
    for line in s.lines:
        d = {}
        for e in line['trace']:
            scores = [o['score'] for o in line['trace']
                      if o is not e and sources(e) & sources(o) and not (mode == 'cross' and o['scope'] == e['scope'])]
            d[e['id']] = sum(scores) if mode == 'sum' else max(scores, default=0.0)
        out.append(d)
    return out


def same_session(mode):
    """extra[qi][id]: the best, mean or count of the other candidates from its sessions (not
    stating its messages)."""
    out = []
    for line in s.lines:
        by = {}
        for e in line['trace']:
            for x in {v.split(':')[0] for v in sources(e)}:
                by.setdefault(x, []).append(e)
        d = {}
        for e in line['trace']:
            others = {o['id']: o['score'] for x in {v.split(':')[0] for v in sources(e)} for o in by[x]
                      if o is not e and not sources(e) & sources(o)}
            vals = list(others.values())
            d[e['id']] = {'max': max(vals, default=0.0), 'mean': float(np.mean(vals)) if vals else 0.0,
                          'count': min(len(vals), 10) / 10}[mode]
        out.append(d)
    return out


def screen(tag, extra, grid):
    for a in grid:
        if a:
            s.report(f'{tag} a {a:+}', s.table(s.ALL, s.added(extra, a)))
    by, picks = h.held_out(extra, grid)
    s.report(f'held-out {tag} (a {picks})', by)


if __name__ == '__main__':
    s.report('recall (the trace reproduced)', s.table(s.ALL, lambda qi: None))
    for mode in ('max', 'sum', 'cross'):
        screen(f'same message, {mode}', same_message(mode), (0.0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3))
    for mode in ('max', 'mean', 'count'):
        screen(f'same session, {mode}', same_session(mode), (-0.1, -0.05, -0.02, 0.0, 0.02, 0.05, 0.1))
