"""A module's expressions built on first use: the module-level ``__getattr__`` (PEP 562) that
every engine module with SymPy expressions shares, so that importing it (``kvlib plan``'s path,
which evaluates kept code) imports no SymPy."""

from __future__ import annotations

from collections.abc import Callable, Collection

__all__ = ["lazy_attributes"]


def lazy_attributes(module: str, names: Collection[str], build: Callable[[], dict]):
    """``__getattr__`` for ``module``: an attribute in ``names`` is ``build()[name]`` (``build``
    cached by its module, e.g. ``symbolic``); any other name raises AttributeError as Python
    would."""

    def __getattr__(name: str):
        if name in names:
            return build()[name]
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
