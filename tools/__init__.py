"""Development tools that are not part of the product: the synthetic gateway log
generator (``synth``) and the recording writer (``recording``) used by the tests,
the fixture builders and the benchmarks."""
