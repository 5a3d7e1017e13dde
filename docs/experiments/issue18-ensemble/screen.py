"""Re-rank a `membus eval locomo --trace-out` offline, as recall would, with a score added.

Shared by the other scripts here (docs/recall-quality.md, "Issue 18, every registry embedder together").
TRACE, DATA_DIR (the eval's --data-dir) and LOCOMO name the inputs; E5_DIR, MINILM_DIR and
BGE_DIR the model directories `make model` fills (defaults: data/models, data/models-minilm,
data/models-bge in the repository); CACHE where cosines are kept between runs.

    python screen.py minilm bge e5    # + a × the model's cosine, a in 0.05…0.5
"""
import itertools
import json
import os
import re
import sqlite3
import sys

import numpy as np
import onnxruntime as ort
from tokenizers import BertWordPieceTokenizer

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '../../..'))  # the repository
TRACE = os.environ.get('TRACE', '/tmp/tr-main.jsonl')
DATA_DIR = os.environ.get('DATA_DIR', '/tmp/dd-main')
LOCOMO = os.environ.get('LOCOMO', os.path.join(ROOT, '../shared/data/locomo/locomo-dev.json'))
CACHE = os.environ.get('CACHE', '/tmp/membus-screen')
os.makedirs(CACHE, exist_ok=True)

# name: (dir, pooling, query prompt, passage prompt, membus_scale.json's shift and scale)
MODELS = {
    'e5': (os.environ.get('E5_DIR', os.path.join(ROOT, 'data/models')), 'mean', 'query: ', 'passage: ', 0.711, 4.24),
    'minilm': (os.environ.get('MINILM_DIR', os.path.join(ROOT, 'data/models-minilm')), 'mean', '', '', 0.0, 0.0),
    'bge': (os.environ.get('BGE_DIR', os.path.join(ROOT, 'data/models-bge')), 'cls', 'Represent this sentence for searching relevant passages: ', '', 0.408, 2.14),
}
CATS = {1: 'multi-hop', 2: 'temporal', 3: 'open-domain', 4: 'single-hop', 5: 'adversarial'}
THRESHOLD, LIMIT = 0.15, 10  # recall's default score threshold; R@10

lines = [json.loads(line) for line in open(TRACE)]
data = json.load(open(LOCOMO))
turn = {}  # (conversation, dia_id) -> the archive's indexed line
for sample in data:
    for key, session in sample['conversation'].items():
        if re.fullmatch(r'session_\d+', key):
            for t in session:
                text = f"{t['speaker']}: {t['text']}"
                if t.get('blip_caption'):
                    text += f" [shares {t['blip_caption']}]"
                turn[(sample['sample_id'], t['dia_id'])] = text
db = sqlite3.connect(f'file:{DATA_DIR}/membus.db?mode=ro', uri=True)
memory = dict(db.execute('select id, text from memories'))


def cand_text(conv, e):
    if e['id'] in memory:
        return memory[e['id']]
    src = e.get('sources') or []
    return turn.get((conv, src[0])) if src else None


def embedder(name):
    """The model's embed function (L2-normalised rows) and its prompts and scale."""
    d, pool, qp, pp, shift, scale = MODELS[name]
    tok = BertWordPieceTokenizer(f'{d}/vocab.txt', lowercase=True)
    tok.enable_truncation(256)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(f'{d}/model.onnx', opts)
    inputs = {i.name for i in sess.get_inputs()}

    def embed(texts):
        out = []
        for i in range(0, len(texts), 32):
            batch = tok.encode_batch(texts[i:i + 32])
            n = max(len(x.ids) for x in batch)
            ids = np.array([x.ids + [0] * (n - len(x.ids)) for x in batch], dtype=np.int64)
            mask = (np.arange(n)[None, :] < np.array([len(x.ids) for x in batch])[:, None]).astype(np.int64)
            feed = {'input_ids': ids, 'attention_mask': mask}
            if 'token_type_ids' in inputs:
                feed['token_type_ids'] = np.zeros_like(ids)
            h = sess.run(None, feed)[0]
            v = h[:, 0] if pool == 'cls' else (h * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
            out.append(v / np.linalg.norm(v, axis=1, keepdims=True))
        return np.concatenate(out)
    return embed, qp, pp, shift, scale


def cosines(name):
    """Per question, candidate id -> the model's cosine of question and candidate, scaled as recall scales it."""
    cache = f'{CACHE}/cos-{name}.json'
    if os.path.exists(cache):
        return json.load(open(cache))
    embed, qp, pp, shift, scale = embedder(name)
    texts = sorted({t for line in lines for e in line['trace'] if (t := cand_text(line['conv'], e))})
    at = {t: i for i, t in enumerate(texts)}
    print(f'{name}: embedding {len(texts)} candidate texts', file=sys.stderr)
    P = embed([pp + t for t in texts])
    Q = embed([qp + line['question'] for line in lines])
    out = []
    for qi, line in enumerate(lines):
        row = {}
        for e in line['trace']:
            t = cand_text(line['conv'], e)
            if t is not None:
                c = float(P[at[t]] @ Q[qi])
                row[e['id']] = min(1.0, max(0.0, (c - shift) * scale)) if scale else c
        out.append(row)
    json.dump(out, open(cache, 'w'))
    return out


def rank(line, score=None):
    """recall's selection: best score first (ties by id), the threshold on the trace's score,
    an item whose messages a kept item states collapsed, LIMIT items; their sources."""
    score = score or (lambda e: e['score'])
    covered, out = set(), []
    for e in sorted(line['trace'], key=lambda e: (-score(e), e['id'])):
        if e['score'] < THRESHOLD:
            continue
        if len(out) >= LIMIT:
            break
        src = e.get('sources') or []
        if src and all(x in covered for x in src):
            continue
        covered.update(src)
        out.append(src)
    return out


def r10(line, ranked):
    evidence = [x for x in line['evidence'] if x]
    if not evidence:
        return None
    got = set(itertools.chain.from_iterable(ranked))
    return sum(x in got for x in evidence) / len(evidence)


def table(idx, score_of):
    """Per category R@10 over the questions idx, ranked by score_of(qi) (a per-entry score function or None)."""
    by = {}
    for qi in idx:
        v = r10(lines[qi], rank(lines[qi], score_of(qi)))
        if v is not None:
            by.setdefault(lines[qi]['category'], []).append(v)
    return by


def core(by):
    return float(np.mean([v for c in (1, 2, 3, 4) for v in by.get(c, [])]))


def report(tag, by):
    print(f'{tag:34s} 1-4 {core(by):.4f} ' + ' '.join(f'{CATS[c]} {np.mean(by[c]):.3f}' for c in sorted(by)))


def added(extra, a):
    """score_of for the trace's score + a × extra[qi][id]."""
    return lambda qi: (lambda e: e['score'] + a * extra[qi].get(e['id'], 0.0))


ALL = range(len(lines))

if __name__ == '__main__':
    report('recall (the trace reproduced)', table(ALL, lambda qi: None))
    own = [{e['id']: e['parts']['dense'] for e in line['trace']} for line in lines]
    for a in (0.1, 0.2, 0.3, 0.5, 0.7, 1.0):
        report(f'+{a} × own dense', table(ALL, added(own, a)))
    for name in sys.argv[1:]:
        cos = cosines(name)
        for a in (0.05, 0.1, 0.2, 0.3, 0.5):
            report(f'+{a} × {name}', table(ALL, added(cos, a)))
