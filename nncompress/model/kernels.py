"""The model's compiled entry points, for code outside nncompress/model/.

    step(packed, value, out)                        learn nibble `value` (< 0: none), predict the
                                                    next nibble's 16 probabilities into out
    predict_known(packed, first_value, nibbles, probs)   the same over a run of known nibbles
    peek_low_nibbles(packed, ...)                   analysis: P(low nibble | each high nibble)

`packed` is `Predictor`'s state (`state.pack`).  The kernels themselves live in one module per
component (contexts, histories, match, mixer, apm, rnn; nibble.py orchestrates them).
"""

from .nibble import peek_low_nibbles, predict_known, step, step_state  # noqa: F401
from .packed import unpack  # noqa: F401
from .state import DTYPE_GROUPS, FIELDS, State  # noqa: F401
