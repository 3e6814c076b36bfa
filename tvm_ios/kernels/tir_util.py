"""Small TIR builders shared by the kernel generators (CPU vDevice, persistent GPU kernel)."""
from __future__ import annotations

import tvm

from .. import _tvm

__all__ = ["i32", "seq", "launch", "fresh"]


def i32(value):
    """An int32 immediate (a PrimExpr is returned as it is)."""
    if isinstance(value, int):
        return _tvm.tirx.IntImm("int32", value)
    return value


def seq(stmts: list):
    """One statement for ``stmts``: itself when alone, else a ``SeqStmt``."""
    stmts = [s for s in stmts if s is not None]
    return stmts[0] if len(stmts) == 1 else _tvm.tirx.SeqStmt(stmts)


def launch(tag: str, extent: int, body, var):
    """``body`` under a ``thread_extent`` of ``extent`` for thread tag ``tag`` bound to ``var``."""
    iv = _tvm.tirx.IterVar(tvm.ir.Range(0, extent), var, 1, tag)
    return _tvm.tirx.AttrStmt(iv, "thread_extent", i32(extent), body)


def fresh(func):
    """A deep copy of ``func`` (new buffers and variables), so that two copies of one kernel
    can be inlined side by side into one PrimFunc without defining the same buffers twice."""
    return tvm.ir.load_json(tvm.ir.save_json(func))
