"""The RNNME expert's pure-Python twin (the reference side of nncompress.model.rnnme).

The expert written plainly: Python lists and floats, one operation at a time in the kernels'
order.  Python floats are IEEE doubles, so a float64 expert needs nothing more; for a float32
expert every operation's double result is rounded to float32 (`_round32`), which gives exactly
the float32 operation's result for +, -, *, / (a double has more than 2 * 24 + 2 significand
bits, so rounding twice is harmless).  Only constant tables and the initial weights are shared
with the kernels (rnnme_config.initial_arrays).  Used by tests/test_rnnme.py directly and by the
predictor's twin (reference.ReferencePredictor) when the expert is part of the model.
"""

from __future__ import annotations

import math
import struct

from . import rnnme_config as rnnme
from .reference import hash32
from .rnnme_config import RNNMEParams, initial_arrays

def _round32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


# the plain-Python twin of the model's hash (the reference twin's, shared)
_mix32 = hash32


class TwinRNNME:
    """The expert written plainly: lists, Python numbers, one rounded operation at a time."""

    def __init__(self, p: RNNMEParams):
        self.p = p
        r = _round32 if p.float_bits == 32 else float
        self.r = r
        fast = initial_arrays(p)  # initial weights and constant tables only
        as_list = lambda name: [[float(v) for v in row] for row in fast[name]]  # noqa: E731
        self.h = p.hidden
        # LSTM (cell 1): 4H gate pre-activations per input row; 7H values per stored step
        # (h | c | tanh(c) | i | f | o | g, rnnme_lstm's layout)
        self.gates = 4 * self.h if p.cell else self.h
        self.width = 7 * self.h if p.cell else self.h
        self.u1, self.u2, self.uw, self.w = (as_list(k) for k in ("u1", "u2", "uw", "w"))
        self.vh = [[0.0] * 16 for _ in range(self.h)]
        self.bh = [0.0] * 16
        self.vl = [[[0.0] * 16 for _ in range(self.h)] for _ in range(16)]
        self.bl = [[0.0] * 16 for _ in range(16)]
        self.me = [0.0] * (1 << p.me_bits if p.me_bits else 16)
        self.me_n = [0] * ((1 << p.me_bits) >> 4 if p.me_bits else 1)
        self.me_rate = [float(v) for v in fast["me_rate"]]
        self.act = [float(v) for v in fast["act"]]
        self.expt = [float(v) for v in fast["expt"]]
        fp = fast["fp"]
        self.lr0, self.lr_min = float(fp[rnnme.F_LR0]), float(fp[rnnme.F_LR_MIN])
        self.lr = self.lr0
        self.out_scale, self.me_total = float(fp[rnnme.F_OUT_SCALE]), float(fp[rnnme.F_ME_TOTAL])
        self.clip = float(fp[rnnme.F_CLIP])
        self.me_ctx_total = float(fp[rnnme.F_ME_CTX_TOTAL])
        self.ctx_first = p.context_feature_start
        self.features = p.features
        self.mask = (1 << p.me_bits) - 1 if p.me_bits else 0
        self.word_mask = (1 << p.word_input_bits) - 1 if p.word_input_bits else 0
        # the block: states s[0..t], their hidden errors, and the inputs that produced them
        self.states = [[0.0] * self.width]
        self.errors = [[0.0] * self.h]
        self.inputs = [(0, 0, 0, 0)]
        self.history = []  # bytes seen
        self.word = self.word1 = 0
        self.match_code = 0  # branch expert4: rnnme_config.R_MATCH, set by the predictor's twin
        self.context_hashes = []  # branch expert4: the predictor's context hashes (its twin sets them)
        self.pos = 0
        self.rows_high = self.rows_low = []
        self.p_high = self.p_low = None
        self.clips = self.scaled = self.ctx_scaled = 0  # how often the clip and the rate caps acted
        # Adam: (first, second) moments per weight, keyed like the weights; W's block gradient
        zeros = lambda rows, cols: [[0.0] * cols for _ in range(rows)]  # noqa: E731
        self.moments = {}
        for name, rows in (("u1", self.u1), ("u2", self.u2), ("uw", self.uw), ("w", self.w)):
            self.moments[name] = (zeros(len(rows), self.gates), zeros(len(rows), self.gates))
        self.moments["vh"] = (zeros(self.h, 16), zeros(self.h, 16))
        self.moments["bh"] = ([0.0] * 16, [0.0] * 16)
        self.moments["vl"] = tuple([zeros(self.h, 16) for _ in range(16)] for _ in range(2))
        self.moments["bl"] = (zeros(16, 16), zeros(16, 16))
        self.grad_w = zeros(self.h, self.gates)
        self.b1, self.omb1 = float(fp[rnnme.F_B1]), float(fp[rnnme.F_1MB1])
        self.b2, self.omb2 = float(fp[rnnme.F_B2]), float(fp[rnnme.F_1MB2])
        self.eps = float(fp[rnnme.F_EPS])

    # -- helpers ----------------------------------------------------------------------------
    def _table(self, table, lo, steps, x):
        r = self.r
        t = r(r(x + lo) * steps)
        if not t > 0.0:
            return table[0]
        last = len(table) - 2
        ti = float(math.floor(t))
        i = int(ti)
        if i >= last:
            return table[last]
        f = r(t - ti)
        return r(table[i] + r(r(table[i + 1] - table[i]) * f))

    def _tanh(self, x):
        return self._table(self.act, rnnme.ACT_RANGE, rnnme.ACT_STEPS, x)

    def _sigmoid(self, x):
        r = self.r
        return r(0.5 + r(0.5 * self._tanh(r(0.5 * x))))

    def _exp(self, x):
        return self._table(self.expt, rnnme.EXP_RANGE, rnnme.EXP_STEPS, x)

    def _feature_hashes(self):
        hist = self.history
        c4 = 0
        c8 = 0
        for k in range(4):
            if len(hist) > k:
                c4 |= hist[-1 - k] << (8 * k)
            if len(hist) > 4 + k:
                c8 |= hist[-5 - k] << (8 * k)
        out = []
        for kind in self.features:
            if kind <= 4:
                out.append(_mix32(kind, c4 & ((1 << (8 * kind)) - 1)))
            elif kind <= 8:
                out.append(_mix32(_mix32(kind, c4), c8 & ((1 << (8 * (kind - 4))) - 1)))
            elif kind == rnnme.WORD_FEATURE:
                out.append(_mix32(_mix32(rnnme.WORD_FEATURE, self.word), c4 & 0xFF))
            elif kind == rnnme.WORD_PAIR_FEATURE:
                out.append(_mix32(_mix32(rnnme.WORD_PAIR_FEATURE, self.word1), self.word))
            elif kind == rnnme.MATCH_FEATURE:  # branch expert4
                out.append(_mix32(rnnme.MATCH_FEATURE, self.match_code))
            elif kind == rnnme.MATCH_ORDER1_FEATURE:  # branch expert4
                out.append(_mix32(_mix32(rnnme.MATCH_ORDER1_FEATURE, self.match_code >> 5), c4 & 0xFF))
            else:  # CONTEXT_FEATURE + i (branch expert4)
                out.append(_mix32(kind, self.context_hashes[kind - rnnme.CONTEXT_FEATURE]))
        return out

    def _softmax(self, s, v, b, rows):
        r = self.r
        z = list(b)
        for k in range(self.h):
            for c in range(16):
                z[c] = r(z[c] + r(v[k][c] * s[k]))
        for base in rows:
            for c in range(16):
                z[c] = r(z[c] + self.me[base + c])
        mx = max(z)
        e = [self._exp(r(zc - mx)) for zc in z]
        total = 0.0
        for ec in e:
            total = r(total + ec)
        return [r(ec / total) for ec in e]

    # -- the two verbs ----------------------------------------------------------------------
    def predict_high(self):
        self.rows_high = [(h << 4) & self.mask for h in self._feature_hashes()]
        self.p_high = self._softmax(self.states[-1], self.vh, self.bh, self.rows_high)
        return self.p_high

    def predict_low(self, hi):
        self.rows_low = [(_mix32(h, hi + 1) << 4) & self.mask for h in self._feature_hashes()]
        self.p_low = self._softmax(self.states[-1], self.vl[hi], self.bl[hi], self.rows_low)
        return self.p_low

    def _adam(self, lr, w, m, v, g):
        r = self.r
        for i in range(len(w)):
            m[i] = r(r(self.b1 * m[i]) + r(self.omb1 * g[i]))
            if self.p.adam == 2:  # AdaMax
                v[i] = max(r(self.b2 * v[i]), abs(g[i]))
                w[i] = r(w[i] + r(r(lr * m[i]) / r(v[i] + self.eps)))
            else:
                v[i] = r(r(self.b2 * v[i]) + r(self.omb2 * r(g[i] * g[i])))
                w[i] = r(w[i] + r(r(lr * m[i]) / r(r(math.sqrt(v[i])) + self.eps)))

    def _train(self, v, b, moments, rows, p, target, lr_out):
        r = self.r
        s, g = self.states[-1], self.errors[-1]
        e = [-pc for pc in p]
        e[target] = r(1.0 - p[target])
        el = [r(lr_out * ec) for ec in e]
        for k in range(self.h):
            acc = g[k]
            for c in range(16):
                acc = r(acc + r(v[k][c] * e[c]))
            g[k] = acc
        if self.p.adam:
            (mv, vv), (mb, vb) = moments
            for k in range(self.h):
                self._adam(lr_out, v[k], mv[k], vv[k], [r(ec * s[k]) for ec in e])
            self._adam(lr_out, b, mb, vb, e)
        else:
            for k in range(self.h):
                for c in range(16):
                    v[k][c] = r(v[k][c] + r(el[c] * s[k]))
            for c in range(16):
                b[c] = r(b[c] + el[c])
        rates = []
        total = 0.0
        for base in rows:
            n = self.me_n[base >> 4]
            rates.append(self.me_rate[n])
            total = r(total + rates[-1])
            if n < len(self.me_rate) - 1:
                self.me_n[base >> 4] = n + 1
        scale = r(self.me_total / total) if total > self.me_total else 1.0
        self.scaled += total > self.me_total
        ctx_total = 0.0
        for rate in rates[self.ctx_first:]:
            ctx_total = r(ctx_total + rate)
        if ctx_total > self.me_ctx_total:
            ctx_scale = r(self.me_ctx_total / ctx_total)
            rates[self.ctx_first:] = [r(rate * ctx_scale) for rate in rates[self.ctx_first:]]
            self.ctx_scaled += 1
        for base, rate in zip(rows, rates):
            rate = r(rate * scale)
            for c in range(16):
                self.me[base + c] = r(self.me[base + c] + r(rate * e[c]))

    def _clip(self, x):
        if abs(x) > self.clip:
            self.clips += 1
        return min(max(x, -self.clip), self.clip)

    def _step_weights(self, t, d):
        """BPTT step t's weight step by the network's optimiser (rnnme_ops.step_weights)."""
        if self.p.adam:
            self._step_inputs(t, d)
        else:
            self._sgd_inputs(t, d)

    def _step_inputs(self, t, d):
        """Adam: the input rows of step t take their step; W's gradient gathers d x h(t-1)."""
        r = self.r
        for m in range(self.h):
            sm = self.states[t - 1][m]
            for k in range(self.gates):
                self.grad_w[m][k] = r(self.grad_w[m][k] + r(d[k] * sm))
        c1, c2, wrow, prow = self.inputs[t]
        mo = self.moments
        self._adam(self.lr, self.u1[c1], mo["u1"][0][c1], mo["u1"][1][c1], d)
        if self.p.input2:
            self._adam(self.lr, self.u2[c2], mo["u2"][0][c2], mo["u2"][1][c2], d)
        if self.word_mask:
            self._adam(self.lr, self.uw[wrow], mo["uw"][0][wrow], mo["uw"][1][wrow], d)
        if self.p.word_prev:
            self._adam(self.lr, self.uw[prow], mo["uw"][0][prow], mo["uw"][1][prow], d)

    def _sgd_inputs(self, t, d):
        """SGD: W and the input rows of step t step along d."""
        r = self.r
        c1, c2, wrow, prow = self.inputs[t]
        dl = [r(self.lr * dk) for dk in d]
        for m in range(self.h):
            sm = self.states[t - 1][m]
            for k in range(self.gates):
                self.w[m][k] = r(self.w[m][k] + r(dl[k] * sm))
        rows = [self.u1[c1]]
        if self.p.input2:
            rows.append(self.u2[c2])
        if self.word_mask:
            rows.append(self.uw[wrow])
        if self.p.word_prev:
            rows.append(self.uw[prow])
        for row in rows:
            for k in range(self.gates):
                row[k] = r(row[k] + dl[k])

    def _back_through_w(self, d):
        """The error reaching h(t - 1): W d, each unit's sum in column order (before W's step)."""
        r = self.r
        out = []
        for m in range(self.h):
            acc = 0.0
            for j in range(self.gates):
                acc = r(acc + r(self.w[m][j] * d[j]))
            out.append(acc)
        return out

    def _end_block(self):
        if self.p.adam:
            mw, vw = self.moments["w"]
            for m in range(self.h):
                self._adam(self.lr, self.w[m], mw[m], vw[m], self.grad_w[m])
                self.grad_w[m] = [0.0] * self.gates
        self.states = [self.states[-1]]
        self.errors = [[0.0] * self.h]
        self.inputs = [self.inputs[-1]]

    def _lstm_bptt(self):
        """rnnme_lstm.bptt_block_lstm, plainly."""
        r = self.r
        h = self.h
        dhn = [0.0] * h
        dcn = [0.0] * h
        for t in range(len(self.states) - 1, 0, -1):
            cur, prev = self.states[t], self.states[t - 1]
            da = [0.0] * (4 * h)
            for k in range(h):
                dh = r(self.errors[t][k] + dhn[k])
                tc, i, f, o, g = (cur[n * h + k] for n in (2, 3, 4, 5, 6))
                dc = r(r(r(dh * o) * r(1.0 - r(tc * tc))) + dcn[k])
                dcn[k] = r(dc * f)
                da[k] = r(r(r(dc * g) * i) * r(1.0 - i))
                da[h + k] = r(r(r(dc * prev[h + k]) * f) * r(1.0 - f))
                da[2 * h + k] = r(r(r(dh * tc) * o) * r(1.0 - o))
                da[3 * h + k] = r(r(dc * i) * r(1.0 - r(g * g)))
            da = [self._clip(x) for x in da]
            dhn = self._back_through_w(da)
            self._step_weights(t, da)
        self._end_block()

    def _lstm_forward(self, a, prev):
        """rnnme_lstm.forward_lstm's cell update from the pre-activations a (4H)."""
        r = self.r
        h = self.h
        out = [0.0] * (7 * h)
        for k in range(h):
            i = self._sigmoid(a[k])
            f = self._sigmoid(a[h + k])
            o = self._sigmoid(a[2 * h + k])
            g = self._tanh(a[3 * h + k])
            c = r(r(f * prev[h + k]) + r(i * g))
            tc = self._tanh(c)
            out[k] = r(o * tc)
            for n, value in ((1, c), (2, tc), (3, i), (4, f), (5, o), (6, g)):
                out[n * h + k] = value
        return out

    def _bptt(self):
        if self.p.cell:
            return self._lstm_bptt()
        r = self.r
        h = self.h
        dn = [0.0] * h
        for t in range(len(self.states) - 1, 0, -1):
            d = []
            for k in range(h):
                sk = self.states[t][k]
                d.append(self._clip(r(r(self.errors[t][k] + dn[k]) * r(1.0 - r(sk * sk)))))
            dn = self._back_through_w(d)
            self._step_weights(t, d)
        self._end_block()

    def learn(self, byte):
        r = self.r
        hi = byte >> 4
        lr_out = r(self.lr * self.out_scale)
        mo = self.moments
        self._train(self.vh, self.bh, (mo["vh"], mo["bh"]), self.rows_high, self.p_high, hi,
                    lr_out)
        low_moments = ((mo["vl"][0][hi], mo["vl"][1][hi]), (mo["bl"][0][hi], mo["bl"][1][hi]))
        self._train(self.vl[hi], self.bl[hi], low_moments, self.rows_low, self.p_low, byte & 15,
                    lr_out)
        self.pos += 1
        self.history.append(byte)
        c = byte + 32 if 65 <= byte <= 90 else byte
        if 97 <= c <= 122 or c >= 128:
            self.word = _mix32(self.word + 1, c)
        elif self.word:
            self.word1, self.word = self.word, 0
        half = self.p.lr_half
        self.lr = r(max(self.lr0 * half / (half + self.pos), self.lr_min))
        if len(self.states) - 1 >= self.p.bptt:
            self._bptt()
        c1 = byte
        c2 = self.history[-2] if len(self.history) > 1 else 0
        wrow = self.word & self.word_mask
        prow = _mix32(rnnme.WORD_PREV_INPUT, self.word1) & self.word_mask  # round 25
        s = self.states[-1]
        a = list(self.u1[c1])
        if self.p.input2:
            a = [r(ak + u) for ak, u in zip(a, self.u2[c2])]
        if self.word_mask:
            a = [r(ak + u) for ak, u in zip(a, self.uw[wrow])]
        if self.p.word_prev:
            a = [r(ak + u) for ak, u in zip(a, self.uw[prow])]
        for m in range(self.h):
            for k in range(self.gates):
                a[k] = r(a[k] + r(self.w[m][k] * s[m]))
        self.states.append(self._lstm_forward(a, s) if self.p.cell else [self._tanh(ak) for ak in a])
        self.errors.append([0.0] * self.h)
        self.inputs.append((c1, c2, wrow, prow))
