"""Two multi-hop screens, offline, not kept (docs/recall-quality.md, issue 18's sub-query round).

1. The speaker: a question that names one of the conversation's speakers ("What pets does Nate
   have?") + g for each archive turn that speaker said and each memory whose first word is the
   speaker's name; on list questions only (specifics.LIST_QUESTION) or on every question.
2. One sub-query per person: a question that names two of the speakers ("What animal do both
   Nate and Joanna like?") asked once for each ("What animal do Nate like?", "What animal do
   Joanna like?"; "X and Y" becomes one of them, "both" goes, a name elsewhere is dropped), each
   candidate + g × (the better sub-query's scaled e5 cosine − the question's).
3. The same without a second model run: each sub-query's vector is the question's less w × the
   other person's name's vector (as recall's names' move, w 0.3), against the question's vector
   less 0.15 × both (the move recall makes now).

Rows: in-sample for a few g, then g picked on four conversations and scored on the fifth.

    TRACE=… DATA_DIR=… LOCOMO=… python subqueries.py
"""
import json
import os
import re

import numpy as np

import screen as S
from specifics import LIST_QUESTION, WORD, held_out, speakers


def named(line):
    """The conversation's speakers the question names, in the order it names them, once each."""
    out = []
    for w in WORD.findall(line['question']):
        if w.lower() in speakers[line['conv']] and w not in out:
            out.append(w)
    return out


def speaker_feature(list_only):
    out = []
    for line in S.lines:
        row, names = {}, {n.lower() for n in named(line)}
        if len(names) == 1 and (not list_only or LIST_QUESTION.match(line['question'])):
            for e in line['trace']:
                t = S.cand_text(line['conv'], e) or ''
                said = re.match(r"^([A-Z][\w'-]*): ", t) if e['scope'] == 'archive' else None
                first = said.group(1) if said else (t.split() or [''])[0].strip(":,").removesuffix("'s")
                row[e['id']] = 1.0 if first.lower() in names else 0.0
        out.append(row)
    return out


def sub_queries(question, a, b):
    out = []
    for keep, drop in ((a, b), (b, a)):
        s = re.sub(rf"\b{a}\s+and\s+{b}\b|\b{b}\s+and\s+{a}\b", keep, question)
        if s == question:
            s = re.sub(rf"\b{drop}\b", '', question)
        out.append(re.sub(r"\s+", ' ', re.sub(r"\bboth\s+", '', s)).strip())
    return out


def sub_query_feature():
    cache = f'{S.CACHE}/subqueries-e5.json'
    if os.path.exists(cache):
        return json.load(open(cache))
    embed, qp, pp, shift, scale = S.embedder('e5')
    out = []
    for line in S.lines:
        row, names = {}, named(line)
        if len(names) >= 2:
            ents = [e for e in line['trace'] if S.cand_text(line['conv'], e)]
            Q = embed([qp + q for q in sub_queries(line['question'], names[0], names[1])] + [qp + line['question']])
            P = embed([pp + S.cand_text(line['conv'], e) for e in ents])
            C = np.clip((P @ Q.T - shift) * scale, 0, 1)
            row = {e['id']: float(max(C[i, 0], C[i, 1]) - C[i, 2]) for i, e in enumerate(ents)}
        out.append(row)
    json.dump(out, open(cache, 'w'))
    return out


def moved_feature(w=0.3):
    cache = f'{S.CACHE}/subqueries-moved-e5.json'
    if os.path.exists(cache):
        return json.load(open(cache))
    embed, qp, pp, shift, scale = S.embedder('e5')
    unit = lambda v: v / np.linalg.norm(v)
    out = []
    for line in S.lines:
        row, names = {}, named(line)
        if len(names) >= 2:
            ents = [e for e in line['trace'] if S.cand_text(line['conv'], e)]
            q, a, b = embed([qp + line['question'], qp + names[0], qp + names[1]])
            P = embed([pp + S.cand_text(line['conv'], e) for e in ents])
            sc = lambda v: np.clip((P @ v - shift) * scale, 0, 1)
            f = np.maximum(sc(unit(q - w * b)), sc(unit(q - w * a))) - sc(unit(q - 0.15 * (a + b)))
            row = {e['id']: float(f[i]) for i, e in enumerate(ents)}
        out.append(row)
    json.dump(out, open(cache, 'w'))
    return out


if __name__ == '__main__':
    S.report('recall (the trace reproduced)', S.table(S.ALL, lambda qi: None))
    for tag, extra, grid in (('speaker, list questions', speaker_feature(True), (0.03, 0.05, 0.1)),
                             ('speaker, every question', speaker_feature(False), (0.03, 0.05, 0.1)),
                             ('one sub-query per person', sub_query_feature(), (0.4, 0.6, 0.8, 1.0)),
                             ('the same by moving the vector', moved_feature(), (0.4, 0.8, 1.2))):
        print(f'{tag}: {sum(1 for r in extra if r)} questions')
        for g in grid:
            S.report(f'{tag} + {g}', S.table(S.ALL, S.added(extra, g)))
        by, picks = held_out(extra, grid=(0.0,) + grid)
        S.report(f'{tag}, held-out (picks {picks})', by)
