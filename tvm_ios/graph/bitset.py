"""Bitset helpers: sets of graph nodes are Python ints, bit ``i`` standing for node ``i``."""
from __future__ import annotations

from typing import Iterable

__all__ = ["ids_of", "ids_desc", "mask_of"]


def ids_of(mask_or_ids: int | Iterable[int]) -> list[int]:
    """Node ids of a bitset (ascending), or the ids of an iterable unchanged."""
    if not isinstance(mask_or_ids, int):
        return list(mask_or_ids)
    out, mask = [], mask_or_ids
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def ids_desc(mask: int) -> list[int]:
    """Node ids of a bitset in descending order (reverse topological for an OpGraph)."""
    out = []
    while mask:
        top = mask.bit_length() - 1
        out.append(top)
        mask ^= 1 << top
    return out


def mask_of(ids: Iterable[int]) -> int:
    """Bitset of node ids."""
    mask = 0
    for i in ids:
        mask |= 1 << i
    return mask
