"""The model's compiled entry points, for code outside nncompress/model/.

    step(packed, value, out)                        learn nibble `value` (< 0: none), predict the
                                                    next nibble's 16 probabilities into out
    predict_known(packed, first_value, nibbles, probs)   the same over a run of known nibbles
    peek_low_nibbles(packed, ...)                   analysis: P(low nibble | each high nibble)

Path coding (ModelParams.path_coding: each nibble coded as four binary symbols):
    predict_known_path(packed, first_value, nibbles, path_p)   encoder: the 4 path nodes'
                                                    probabilities of every known nibble
    path_step_state / path_probability(state, ...)  decoder (nncompress.fused): one nibble's
                                                    inputs, then one node at a time

`packed` is `Predictor`'s state (`state.pack`).  The kernels themselves live in one module per
component (contexts, histories, match, mixer, apm, rnn; nibble.py orchestrates them).
"""

from .nibble import peek_low_nibbles, predict_known, step, step_state  # noqa: F401
from .nibble import path_probability, path_step_state, predict_known_path  # noqa: F401
from .packed import unpack  # noqa: F401
from .state import DTYPE_GROUPS, FIELDS, State  # noqa: F401
