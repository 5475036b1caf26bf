"""The judge: decides whether a premise entails a claim.

:mod:`.checker` (the NLI cross-encoder: loading, batching, long-premise windows, backends),
:mod:`.verdicts` (the verdict rules, the place for calibration), :mod:`.prefilter` (a cheap
relevance screen), :mod:`.cache` (probabilities and claims across runs), :mod:`.device` and
:mod:`.onnx_backend`.
"""
