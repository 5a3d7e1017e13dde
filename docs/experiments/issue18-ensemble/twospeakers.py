"""A lighter dense part for a question that names two speakers, offline
(docs/recall-quality.md, issue 18's two-speaker round).

The arithmetic round (personarith.py) found that its larger moves are no person's query: with
the better person's row clipped to 0, the feature was − g × the question's own dense part, and
that alone held out at multi-hop 0.596. The dense part is in the trace, so no vector is needed:
a question that names two of the conversation's speakers ("What pets do Audrey and Andrew both
have?") embeds as a mix of two persons' halves, and its candidates + g × (− their dense part),
on those questions only; or the same weight moved from the dense part to the keyword part.
Then, on the same questions, the attention-mask rows (attnmask.py, recall's opt-in per-person
queries at 0.6) with the lighter dense part as well; and, over the lighter dense part at 0.4,
both persons covered: ranked greedily, a candidate said by a named speaker who already holds k
of the places above it − p.

Rows: in-sample for each g (and each k and p), then g (k and p) picked on four conversations and
scored on the fifth.

    TRACE=… DATA_DIR=… LOCOMO=… CACHE=… python twospeakers.py
"""
import screen as S
from attnmask import VARIANTS, each_question, per_person
from specifics import held_out
from subqueries import named

GRID = (0.0, 0.1, 0.2, 0.3, 0.4, 0.6)


def feature(kind):
    """Per question, candidate id -> − its dense part ('dense') or − its dense part + its
    keyword part ('shift'), on questions that name two speakers; {} on the others."""
    out = []
    for line in S.lines:
        if len(named(line)) < 2:
            out.append({})
            continue
        parts = {e['id']: e['parts'] for e in line['trace']}
        if kind == 'dense':
            out.append({i: -p['dense'] for i, p in parts.items()})
        else:
            out.append({i: -p['dense'] + p['keyword'] for i, p in parts.items()})
    return out


def covered(light, k, p):
    """score_of: the trace's score + 0.4 × light; on two-speaker questions the candidates are
    then taken greedily, one said by a named speaker holding k places above it − p."""
    def score_of(qi):
        line = S.lines[qi]
        score = {e['id']: e['score'] + 0.4 * light[qi].get(e['id'], 0.0) for e in line['trace']}
        who = {n.lower() for n in named(line)}
        if len(who) < 2:
            return lambda e: score[e['id']]
        speaker = {}
        for e in line['trace']:
            head = (S.cand_text(line['conv'], e) or '').split(':', 1)[0].strip().lower()
            speaker[e['id']] = head if head in who else None
        left = sorted(score, key=lambda i: (-score[i], i))
        held, place = {}, {}
        while left:
            def now(i):
                return score[i] - (p if speaker[i] and held.get(speaker[i], 0) >= k else 0)
            best = max(left, key=now)  # the first of equals: left is in the trace's order
            left.remove(best)
            place[best] = -len(place)
            if speaker[best]:
                held[speaker[best]] = held.get(speaker[best], 0) + 1
        return lambda e: place[e['id']]
    return score_of


if __name__ == '__main__':
    S.report('recall (the trace reproduced)', S.table(S.ALL, lambda qi: None))
    print(sum(1 for line in S.lines if len(named(line)) >= 2), 'questions name two speakers')
    for kind in ('dense', 'shift'):
        f = feature(kind)
        for g in GRID[1:]:
            S.report(f'  {kind}, {g}', S.table(S.ALL, S.added(f, g)))
        by, picks = held_out(f, grid=GRID)
        S.report(f'{kind}, held-out (picks {picks})', by)
    mask = each_question('attnmask-person1-e5', per_person(list(VARIANTS.values())[1]))
    S.report('attention mask, 0.6', S.table(S.ALL, S.added(mask, 0.6)))
    light = feature('dense')
    for g in (0.1, 0.2, 0.4):
        both = [{i: 0.6 * m.get(i, 0.0) + g * d.get(i, 0.0) for i in set(m) | set(d)} for m, d in zip(mask, light)]
        S.report(f'attention mask, 0.6, and dense, {g}', S.table(S.ALL, S.added(both, 1.0)))
    cover = [(k, p) for k in (2, 3, 4, 5) for p in (0.05, 0.1, 0.2)]
    for k, p in cover:
        S.report(f'  covered, k {k}, p {p}', S.table(S.ALL, covered(light, k, p)))
    by, picks = {}, []
    for held in sorted({line['conv'] for line in S.lines}):
        train = [qi for qi in S.ALL if S.lines[qi]['conv'] != held]
        test = [qi for qi in S.ALL if S.lines[qi]['conv'] == held]
        kp = max(cover + [(99, 0.0)], key=lambda kp: S.core(S.table(train, covered(light, *kp))))
        picks.append(kp)
        for c, vs in S.table(test, covered(light, *kp)).items():
            by.setdefault(c, []).extend(vs)
    S.report(f'covered, held-out (picks {picks})', by)
