"""auditor: audit the Gonka inference network from chain, gateway accounting and gateway logs."""

__version__ = "0.1.0"
