"""Analyses: one module per question, each ``run(store, epoch, ...) -> Result``."""
