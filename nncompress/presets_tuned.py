"""Tuned compression levels (branch `tune`, see bench/TUNING.md): kwargs for ModelParams.

Measured with bench/ent.py (ideal code length from the model's probabilities, bpc; container
overhead not included).  Model speeds are KB/s of `predict_known` on the 2-core dev box while
other jobs were running (load ~3-4), so they are pessimistic; the untouched old default measured
99-175 KB/s under the same conditions.
"""

from .model.params import (COLUMN, SPARSE_GAP, SPARSE_SKIP1, WORD, WORD_BIGRAM, WORD_ORDER1,
                           WORD_SKIP, WORD_TRIGRAM)

# shared by all levels: mixer step 4 with a boost for fresh weight sets, final mixer step 4/4,
# bit-history states that keep the last bit while n0 + n1 <= 8, RNN step 0.3.
_COMMON = dict(mixer_lr=4, mixer_lr_boost=16, mixer_lr_decay=256, final_lr=4, state_table=2,
               rnn_lr_micro=300000, rnn_bptt=8)

LEVELS = {
    # 5 contexts, stretch input only, 2 mixers (partial byte; contexts-seen count), 19 MiB
    1: dict(_COMMON, contexts=(1, 2, 3, 4, WORD), ctx_inputs=1, mixer_select=0b1001,
            rnn_hidden=8, table_bits=20, history_bits=22, match_bits=18),
    # 7 contexts, + deterministic-history input, 3 mixers (partial byte; previous byte; seen), 39 MiB
    3: dict(_COMMON, contexts=(1, 2, 3, 4, 6, WORD, WORD_SKIP), ctx_inputs=2, mixer_select=0b1101,
            rnn_hidden=8, table_bits=21, history_bits=23, match_bits=19),
    # 9 contexts, 4 mixers (partial byte; previous byte; seen; RNN-state signs), order-1 APM, 83 MiB
    6: dict(_COMMON, contexts=(1, 2, 3, 4, 6, 8, WORD, WORD_BIGRAM, WORD_SKIP), ctx_inputs=2,
            mixer_select=0b11101, apm1_order=1, apm1_weight=6, apm2_weight=6, rnn_hidden=16,
            table_bits=22, history_bits=24, match_bits=20),
    # 17 contexts, 3 inputs each, all 6 mixers, 16 MiB per context table, 366 MiB
    9: dict(_COMMON, contexts=(1, 2, 3, 4, 5, 6, 7, 8, 12, WORD, WORD_BIGRAM, SPARSE_SKIP1,
                               SPARSE_GAP, COLUMN, WORD_ORDER1, WORD_TRIGRAM, WORD_SKIP),
            ctx_inputs=3, mixer_select=0b111111, apm1_order=1, apm1_weight=6, apm2_weight=6,
            rnn_hidden=32, table_bits=24, history_bits=24, match_bits=22),
}

# bpc per file and model KB/s range (loaded machine) as measured for each level.
MEASURED = {
    1: dict(bpc={"alice29.txt": 1.9883, "asyoulik.txt": 2.2172, "lcet10.txt": 1.7200,
                 "plrabn12.txt": 2.1399, "book2": 1.7566, "paper1": 2.0939, "news": 2.1014,
                 "enwik8_1M": 1.8559}, kbps=(51, 95), memory_mib=19),
    3: dict(bpc={"alice29.txt": 1.9322, "asyoulik.txt": 2.1781, "lcet10.txt": 1.6732,
                 "plrabn12.txt": 2.0938, "book2": 1.6981, "paper1": 2.0566, "news": 2.0470,
                 "enwik8_1M": 1.7996}, kbps=(35, 60), memory_mib=39),
    6: dict(bpc={"alice29.txt": 1.9093, "asyoulik.txt": 2.1683, "lcet10.txt": 1.6487,
                 "plrabn12.txt": 2.0792, "book2": 1.6723, "paper1": 2.0452, "news": 2.0274,
                 "enwik8_1M": 1.7813}, kbps=(44, 93), memory_mib=83),
    9: dict(bpc={"alice29.txt": 1.8907, "asyoulik.txt": 2.1583, "lcet10.txt": 1.6145,
                 "plrabn12.txt": 2.0420, "book2": 1.6438, "paper1": 2.0320, "news": 1.9829,
                 "enwik8_1M": 1.7455}, kbps=(17, 56), memory_mib=366),
}
