"""Renderers: format analysis results; they never compute."""
