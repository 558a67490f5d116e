"""Entropy bench: ideal code length of the model on corpus files (tune worktree's model).

usage: ent.py FILES "{'kw':v}"   FILES = comma list, each NAME or NAME:PREFIXBYTES
Prints bpc and KB/s per file (KB/s excludes numba compile: a tiny warm-up runs first).
"""
import ast, os, sys, time
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import numpy as np
from nncompress.model.predictor import Predictor, bytes_to_nibbles
from nncompress.model.params import ModelParams

def run(data, **kw):
    p = Predictor(ModelParams(**kw))
    t = time.perf_counter(); probs = p.predict_known(data); dt = time.perf_counter() - t
    nib = bytes_to_nibbles(data)
    pr = probs[np.arange(len(nib)), nib] / probs.sum(1)
    return -np.log2(pr).sum() / len(data), len(data) / 1024 / dt, p.memory_bytes

if __name__ == '__main__':
    kw = ast.literal_eval(sys.argv[2]) if len(sys.argv) > 2 else {}
    tag = sys.argv[3] if len(sys.argv) > 3 else ''
    run(b'warm up the jit ' * 8, **kw)
    tot_bits = tot_len = 0
    res = []
    for f in sys.argv[1].split(','):
        name, _, pre = f.partition(':')
        d = open('/work/shared/corpora/' + name, 'rb').read()
        if pre: d = d[:int(pre)]
        b, s, mem = run(d, **kw)
        res.append(f'{f}={b:.4f}')
        print(f'{f:16s} {b:.4f} bpc {s:6.1f} KB/s mem {mem/2**20:.0f}MiB', flush=True)
    print('SUMMARY', tag, ' '.join(res), kw, flush=True)
