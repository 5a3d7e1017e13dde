"""The specifics of a list question, offline (docs/recall-quality.md, issue 18's specifics round).

A "what …"/"which …" question (not "what is/was/did/does/do") asks for things; the items that
name them (a title, a place) hold capitalised words that do not start a sentence and that the
question does not hold. Each candidate of such a question gets + g × min(n, 3)/3 after recall's
score, n those words, counted in a memory's text or an archive turn's own line. Rows: in-sample
for g 0.1 / 0.15 / 0.2, the same for every question, the same without the conversation's
speakers' names counted; then g picked on four conversations and scored on the fifth.

    TRACE=… DATA_DIR=… LOCOMO=… python specifics.py
"""
import collections
import re

import screen as S

LIST_QUESTION = re.compile(r"(?i)^\s*(what|which)\b(?!\s+(is|was|did|does|do)\b)")
NOT_SPECIFIC = set("""a an the and or of to in on at for with is are was were be been did do does what when
where who whom which why how i you he she it we they his her their my your our its that this these those as by
from about has have had i'm i've i'll i'd""".split())
WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")
CAP = 3

speakers = collections.defaultdict(set)
for sample in S.data:
    for key, session in sample['conversation'].items():
        if re.fullmatch(r'session_\d+', key):
            for t in session:
                speakers[sample['sample_id']].add(t['speaker'].lower())


def specifics(question, text, also_out=()):
    q = {w.lower() for w in WORD.findall(question)}
    body = re.sub(r"^[A-Z][\w'-]*: ", '', text)
    seen = set()
    for m in WORD.finditer(body):
        w = m.group(0)
        before = body[:m.start()].rstrip(' "\'([“‘')
        starts = before == '' or before[-1] in '.!?:'
        lw = w.lower()
        if w[0].isupper() and not starts and lw not in NOT_SPECIFIC and lw not in q and lw not in also_out:
            seen.add(lw)
    return min(len(seen), CAP)


def feature(list_only=True, without_speakers=False):
    out = []
    for line in S.lines:
        row = {}
        if not list_only or LIST_QUESTION.match(line['question']):
            for e in line['trace']:
                t = S.cand_text(line['conv'], e)
                if t is not None:
                    row[e['id']] = specifics(line['question'], t, speakers[line['conv']] if without_speakers else ()) / CAP
        out.append(row)
    return out


def held_out(extra, grid=(0.0, 0.05, 0.1, 0.15, 0.2, 0.3)):
    by, picks = {}, []
    convs = sorted({line['conv'] for line in S.lines})
    for held in convs:
        train = [qi for qi in S.ALL if S.lines[qi]['conv'] != held]
        test = [qi for qi in S.ALL if S.lines[qi]['conv'] == held]
        g = max(grid, key=lambda g: S.core(S.table(train, S.added(extra, g))))
        picks.append(g)
        for c, vs in S.table(test, S.added(extra, g)).items():
            by.setdefault(c, []).extend(vs)
    return by, picks


if __name__ == '__main__':
    S.report('recall (the trace reproduced)', S.table(S.ALL, lambda qi: None))
    for tag, extra in (('list questions', feature()),
                       ('every question', feature(list_only=False)),
                       ('list, speakers not counted', feature(without_speakers=True))):
        for g in (0.1, 0.15, 0.2):
            S.report(f'{tag} + {g}', S.table(S.ALL, S.added(extra, g)))
        by, picks = held_out(extra)
        S.report(f'{tag}, held-out (picks {picks})', by)
