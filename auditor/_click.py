"""click's modules as typer carries them: typer releases that vendor click keep it as
``typer._click``, older ones depend on click itself. One place decides which."""

try:
    from typer._click import exceptions, globals, types  # noqa: A004 (click's own module names)
except ImportError:  # typer releases that depend on click instead of carrying it
    from click import exceptions, globals, types  # type: ignore[no-redef]

__all__ = ["exceptions", "globals", "types"]
