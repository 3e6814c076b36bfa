"""Where the GraphTurbo passes keep their decisions: one JSON module attribute.

``GroupSubgraphs`` records the groups, ``SplitInstances`` the whole plan, and
``OrderInstances`` reads the plan's order. Keys are function names.
"""
from __future__ import annotations

import json

__all__ = ["ATTR", "load", "store"]

ATTR = "tvm_ios.graphturbo"


def load(mod, func_name: str) -> dict:
    """The record for ``func_name`` (empty when none)."""
    if mod.attrs is None or ATTR not in mod.attrs:
        return {}
    return json.loads(str(mod.attrs[ATTR])).get(func_name, {})


def store(mod, func_name: str, record: dict):
    """Return ``mod`` with the record for ``func_name`` replaced."""
    stored = {}
    if mod.attrs is not None and ATTR in mod.attrs:
        stored = json.loads(str(mod.attrs[ATTR]))
    stored[func_name] = record
    return mod.with_attr(ATTR, json.dumps(stored))
