"""Collectors: the only code that talks to the outside. One module per source."""
