"""Developer tooling: training data, training, calibration, evaluation and benchmarks of the
NLI judge (``ragcheck-local dev ...``).

One module per job, each taking a frozen config from :mod:`ragcheck_local.dev.config` and
returning data; the command line (:mod:`ragcheck_local.cli.dev`) only parses and prints.
Nothing in the engine imports this package: it sits directly below ``cli`` in the layers.

- :mod:`.datasets`: every dataset reader (SNLI, Factcheck-GPT, LingNLI, SICK, ANLI, SummaC,
  WiCE, pairs JSON Lines, human judgments) and the dev / report-half split rules;
- :mod:`.perturb`, :mod:`.grounding`: claim-against-passage training data (``make-data``);
- :mod:`.train_data`, :mod:`.train`, :mod:`.ledger`: the trainer (``train``);
- :mod:`.average`: weight averaging of checkpoints (``average``: WiSE-FT, model soups);
- :mod:`.calibrate`: the calibrated verdict head (``calibrate``);
- :mod:`.evaluate`: accuracy on the NLI sets through the engine (``eval-nli``);
- :mod:`.paired`: two models' predictions on the same pairs, paired bootstrap (``compare-nli``);
- :mod:`.meta_eval`: agreement with human judgments (``meta-eval``);
- :mod:`.workload`, :mod:`.bench`, :mod:`.bench_memory`: throughput and memory benchmarks.
"""
