"""Which reader reads which ``model_type``: one module per family registers itself here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kvlib.models.readers.fields import Fields
from kvlib.models.readers.reading import Attention

__all__ = ["Family", "FAMILIES", "register"]

# read(c, family, n, notes) -> Attention; c is the language model's fields, n its layer count.
Read = Callable[[Fields, str, int, list[str]], Attention]


@dataclass(frozen=True)
class Family:
    """A reader and what its config class defaults that changes the cache."""

    read: Read
    module: str
    max_positions: int | None = None  # the config class's max_position_embeddings default
    handles: frozenset[str] = frozenset()  # hybrid marker fields this reader reads itself
    ignores: frozenset[str] = frozenset()  # keys this family has that leave its cache alone
    count_layers: Callable[[Fields], int | None] | None = None  # when num_hidden_layers is absent


FAMILIES: dict[str, Family] = {}


def register(*model_types: str, max_positions: int | None = None,
             handles: tuple[str, ...] = (),
             ignores: tuple[str, ...] = (),
             count_layers: Callable[[Fields], int | None] | None = None,
             ) -> Callable[[Read], Read]:
    """Register ``read`` for each ``model_type`` (the ``_text`` suffix of wrappers removed).

    handles: the fields of :data:`kvlib.models.readers.refuse.MARKERS` this reader
    accounts for; any other marker in a config of this family is still refused.
    ignores: keys of this family, checked against its modeling code, that do not change
    what a layer caches though their names could (the closed world, :mod:`.closed`).
    count_layers: the layer count from another field, for a family whose config class
    derives ``num_hidden_layers`` (Nemotron-H: the length of ``layers_block_type``).
    """
    def add(read: Read) -> Read:
        for t in model_types:
            if t in FAMILIES:
                raise RuntimeError(f"model_type {t!r} has two readers")
            FAMILIES[t] = Family(read, read.__module__.rsplit(".", 1)[-1], max_positions,
                                 frozenset(handles), frozenset(ignores), count_layers)
        return read
    return add
