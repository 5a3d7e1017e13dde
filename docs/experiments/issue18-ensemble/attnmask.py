"""Sub-queries by attention mask, offline (docs/recall-quality.md, issue 18's pooling round).

A question that names two of the conversation's speakers runs as a batch of three rows with the
same tokens: the question, and once per person with the other person's name (and, in the second
variant, "both" and "and") masked out of the attention and of the pooling, so the model reads
"What animal do Nate like?" without a second tokenisation or any padding. Each candidate +
g × (the better person's scaled e5 cosine − the question's), as subqueries.py's second screen.
And names-blind by attention mask: every question with a capitalised word after its first (as
recall's queryNames) runs once with those words masked out, in place of the question (no second
row, no second run); + g × (that vector's scaled cosine − the trace's dense part, which is the
cosine recall uses now: the question moved away from the names' own vectors).
Also: the batch's time against the question's alone (ONNX Runtime as recall runs it: two
intra-op threads, no spinning), on each of those questions.

Rows: in-sample for a few g, then g picked on four conversations and scored on the fifth.

    TRACE=… DATA_DIR=… LOCOMO=… python attnmask.py
"""
import json
import os
import re
import time

import numpy as np
import onnxruntime as ort
from tokenizers import BertWordPieceTokenizer

import screen as S
from poolmask import candidate_vectors
from specifics import held_out
from subqueries import named

VARIANTS = {'the other name': lambda other: [other], 'the other name, "both" and "and"': lambda other: [other, 'both', 'and']}


def session(threads):
    d = S.MODELS['e5'][0]
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.add_session_config_entry('session.intra_op.allow_spinning', '0')
    return ort.InferenceSession(f'{d}/model.onnx', opts), BertWordPieceTokenizer(f'{d}/vocab.txt', lowercase=True)


def feed_for(tok, sess, text, drops):
    """One row for the text as it is, then one per list of words to mask out."""
    enc = tok.encode(text)
    masks = [[1] * len(enc.ids)]
    for drop in drops:
        spans = [m.span() for w in drop for m in re.finditer(rf"\b{re.escape(w)}\b", text)]
        masks.append([0 if b > a and any(a < e and b > s for s, e in spans) else 1 for a, b in enc.offsets])
    mask = np.array(masks, dtype=np.int64)
    ids = np.tile(np.array(enc.ids, dtype=np.int64), (len(masks), 1))
    feed = {'input_ids': ids, 'attention_mask': mask}
    if 'token_type_ids' in {i.name for i in sess.get_inputs()}:
        feed['token_type_ids'] = np.zeros_like(ids)
    return feed


def vectors(sess, feed):
    h = sess.run(None, feed)[0]
    m = feed['attention_mask'][..., None]
    v = (h * m).sum(1) / m.sum(1)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def each_question(cache_name, value):
    """value(line, text, sess, tok, ents, scaled) for every question: a row (candidate id ->
    float, or empty), ents the trace's candidates and scaled(V) their scaled e5 cosines with
    each row of V. The rows, cached."""
    cache = f'{S.CACHE}/{cache_name}.json'
    if os.path.exists(cache):
        return json.load(open(cache))
    embed, qp, pp, shift, scale = S.embedder('e5')
    sess, tok = session(1)
    allP, at = candidate_vectors(embed, pp)
    out = []
    for line in S.lines:
        ents = [e for e in line['trace'] if S.cand_text(line['conv'], e)]
        P = allP[[at[S.cand_text(line['conv'], e)] for e in ents]]
        out.append(value(line, qp + line['question'], sess, tok, ents,
                         lambda V, P=P: np.clip((P @ np.atleast_2d(V).T - shift) * scale, 0, 1)))
    json.dump(out, open(cache, 'w'))
    return out


def per_person(drop):
    """The better person's row's cosine less the question row's, on questions naming two speakers."""
    def value(line, text, sess, tok, ents, scaled):
        names = named(line)
        if len(names) < 2:
            return {}
        C = scaled(vectors(sess, feed_for(tok, sess, text, [drop(names[1]), drop(names[0])])))
        return {e['id']: float(max(C[i, 1], C[i, 2]) - C[i, 0]) for i, e in enumerate(ents)}
    return value


NAMES = re.compile(r"\b[A-Z][a-z]+\b")


def names_blind(line, text, sess, tok, ents, scaled):
    """The names-masked row's cosine (a batch of one) less the trace's dense part."""
    rest = line['question'].split(None, 1)
    names = NAMES.findall(rest[1]) if len(rest) > 1 else []
    if not names:
        return {}
    feed = {k: v[1:] for k, v in feed_for(tok, sess, text, [names]).items()}
    c = scaled(vectors(sess, feed))[:, 0]
    return {e['id']: float(c[i] - e['parts']['dense']) for i, e in enumerate(ents)}


def timing(rounds=20):
    """Median ms of the question alone and of its three-row batch, over the two-person questions."""
    sess, tok = session(2)
    qp = S.MODELS['e5'][2]
    one, three = [], []
    for line in S.lines:
        names = named(line)
        if len(names) >= 2:
            text = qp + line['question']
            f1 = feed_for(tok, sess, text, [])
            f3 = feed_for(tok, sess, text, [[names[1], 'both', 'and'], [names[0], 'both', 'and']])
            for _ in range(rounds):
                for f, acc in ((f1, one), (f3, three)):
                    t = time.perf_counter()
                    sess.run(None, f)
                    acc.append(time.perf_counter() - t)
    return 1000 * np.median(one), 1000 * np.median(three)


if __name__ == '__main__':
    S.report('recall (the trace reproduced)', S.table(S.ALL, lambda qi: None))
    for i, (variant, drop) in enumerate(VARIANTS.items()):
        extra = each_question(f'attnmask-person{i}-e5', per_person(drop))
        print(f'masking {variant}: {sum(1 for r in extra if r)} questions')
        for g in (0.4, 0.6, 0.8, 1.0):
            S.report(f'  + {g}', S.table(S.ALL, S.added(extra, g)))
        by, picks = held_out(extra, grid=(0.0, 0.4, 0.6, 0.8, 1.0))
        S.report(f'  held-out (picks {picks})', by)
    extra = each_question('attnmask-blind-e5', names_blind)
    print(f'names-blind by attention mask: {sum(1 for r in extra if r)} questions')
    for g in (0.1, 0.2, 0.3, 0.5, 0.7):
        S.report(f'  + {g}', S.table(S.ALL, S.added(extra, g)))
    by, picks = held_out(extra, grid=(0.0, 0.1, 0.2, 0.3, 0.5, 0.7))
    S.report(f'  held-out (picks {picks})', by)
    a, b = timing()
    print(f'the question alone {a:.2f} ms, its three-row batch {b:.2f} ms ({b / a:.2f}x)')
