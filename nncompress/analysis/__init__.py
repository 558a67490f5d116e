"""`nncompress analyze`: how much information a file holds, and where the model pays for it.

    nncompress analyze FILE|DIR|SET ... [--level N] [--json OUT] [--plot OUT.png]
                       [--html OUT.html] [--html-limit BYTES] [--window N]

For every file it reports

* size and number of distinct byte values;
* the empirical conditional entropies H(X | k previous bytes), k = 0..5, from the file's own
  counts.  These are *not* achievable code lengths: a model that knew the whole file's statistics
  in advance would reach them, an adaptive coder has to learn them.  For k >= 2 on small files they
  are optimistic lower bounds (many contexts occur once, and a context seen once "predicts" its
  byte for free), so H_5 of a 100 KB file can be far below what any compressor achieves;
* the ideal code length of a simple adaptive order-2 model (Krichevsky-Trofimov estimator, counts
  learned as it goes: a real, decodable baseline);
* gzip (zlib -9), xz (lzma -9e) and PAQ (paq9a, when the `paq` package is installed) for reference;
* nncompress's self-information per byte, read from the predictions `codec.StreamEncoder` codes
  while it compresses the file, and the size of that real .nnc stream.

Directories and named corpus sets get a summary table with totals.  `--plot` draws learning
curves (bits per byte over a moving window vs position), `--html` writes a self-contained page
with every character coloured by its cost under the model and the model's top-5 predictions on
hover.

FILE|DIR|SET is resolved by :mod:`nncompress.targets`, the rule `nncompress bench` uses.

Rooms: :mod:`.entropy` (empirical entropies, the order-2 baseline), :mod:`.costs` (the model's
cost of every byte), :mod:`.report` (per-file and per-set numbers, the text report), :mod:`.page`
(the surprisal HTML page), :mod:`.plot` (learning curves), :mod:`.command` (the command line).
The reference compressors come from :mod:`nncompress.comparators`.

Python API: `code_lengths`, `entropy_table`, `entropy_details`, `order2_code_lengths`,
`analyze_file`, `analyze_paths`, `write_plot`, `write_html`.
"""

from .command import build_parser, main
from .costs import code_lengths, model_pass, nncompress_size, top_predictions
from .entropy import HIGH_ORDER_NOTE, MAX_ORDER, entropy_details, entropy_table, order2_code_lengths
from .page import DEFAULT_HTML_LIMIT, char_groups, cost_bin, surprisal_html, write_html
from .plot import auto_window, moving_average, write_plot
from .report import analyze_file, analyze_paths, format_report, set_summary

__all__ = ["build_parser", "main", "code_lengths", "model_pass", "nncompress_size", "top_predictions",
           "HIGH_ORDER_NOTE", "MAX_ORDER", "entropy_details", "entropy_table", "order2_code_lengths",
           "DEFAULT_HTML_LIMIT", "char_groups", "cost_bin", "surprisal_html", "write_html", "auto_window",
           "moving_average", "write_plot", "analyze_file", "analyze_paths", "format_report", "set_summary"]
