"""An rTask on fewer threads than its vEU, with every barrier reached by every thread.

A vEU has as many threads as its largest rTask; an rTask with fewer threads must leave the
others idle. CUDA could fence the rTask's syncs with a named barrier (``bar.sync 1, n``
inside ``if (t < n)``), but OpenCL requires every work-item of a group to reach each
barrier (Oclgrind: "Only 32 out of 64 work-items executed barrier"). One shape is correct
on both, and it is the one generated for both (so the OpenCL kernel Oclgrind checks has the
CUDA kernel's barriers): :func:`mask_rtask` pushes the guard ``t < n`` *inside* the body,
around every stretch of work between two barriers, and leaves the barriers, the loops and
branches that hold them, and the scalar bindings unguarded. Idle threads compute the
bindings of thread 0 (their thread index is clamped by the caller), so every address they
form is one thread 0 forms; every store, call and allocation stays behind the guard.
"""
from __future__ import annotations

import logging

import tvm

from ... import _tvm
from ..tir_util import seq
from ..tvm_kernels import UnsupportedKernel

__all__ = ["mask_rtask", "has_barrier", "guarded_barriers"]

logger = logging.getLogger(__name__)
tirx = _tvm.tirx
_BARRIER = "tirx.tvm_storage_sync"
_UNGUARDED = ("Bind", "LetStmt", "AllocBuffer", "DeclBuffer")  # scope extends to later statements


def _is_barrier(stmt) -> bool:
    value = getattr(stmt, "value", None)
    return (isinstance(stmt, tirx.Evaluate) and isinstance(value, tvm.ir.expr.Call)
            and getattr(value.op, "name", "") == _BARRIER)


def has_barrier(stmt) -> bool:
    """Whether ``stmt`` holds a block barrier (``tvm_storage_sync``) anywhere."""
    found = []

    def visit(call):
        if getattr(call.op, "name", "") == _BARRIER:
            found.append(call)
        return call
    _tvm.structural_map(stmt, (tvm.ir.expr.Call, visit))
    return bool(found)


def mask_rtask(body, active):
    """``body`` where only threads with ``active`` do work but all reach its barriers.

    Raises
    ------
    UnsupportedKernel
        A barrier inside a statement the guard cannot be pushed through (a ``while``).
    """
    if not has_barrier(body):
        return tirx.IfThenElse(active, body, None)
    return _mask(body, active)


def _mask(stmt, active):
    if _is_barrier(stmt):
        return stmt
    if isinstance(stmt, tirx.SeqStmt):
        return _mask_seq(list(stmt.seq), active)
    if not has_barrier(stmt):
        return tirx.IfThenElse(active, stmt, None)
    if isinstance(stmt, tirx.For):
        return tirx.For(stmt.loop_var, stmt.min, stmt.extent, stmt.kind,
                        _mask(stmt.body, active), stmt.thread_binding, stmt.annotations)
    if isinstance(stmt, tirx.IfThenElse):  # a barrier under it: the condition is uniform
        other = None if stmt.else_case is None else _mask(stmt.else_case, active)
        return tirx.IfThenElse(stmt.condition, _mask(stmt.then_case, active), other)
    if isinstance(stmt, tirx.AttrStmt):
        return tirx.AttrStmt(stmt.node, stmt.attr_key, stmt.value, _mask(stmt.body, active))
    raise UnsupportedKernel(f"a barrier inside {type(stmt).__name__} cannot be reached by "
                            "the threads an rTask leaves idle")


def _mask_seq(stmts: list, active):
    out, run = [], []

    def flush():
        if run:
            out.append(tirx.IfThenElse(active, seq(list(run)), None))
            run.clear()
    for stmt in stmts:
        if type(stmt).__name__ in _UNGUARDED:
            flush()
            out.append(stmt)
        elif has_barrier(stmt):
            flush()
            out.append(_mask(stmt, active))
        else:
            run.append(stmt)
    flush()
    return seq(out)


def guarded_barriers(stmt, names: set) -> list:
    """The barriers of ``stmt`` that sit under an ``if`` whose condition reads a variable
    named in ``names`` (a thread index): the shape where not every thread reaches them."""
    found = []

    def reads(expr) -> bool:
        seen = set()
        _tvm.structural_map(expr, (tirx.Var, lambda v: (seen.add(v.name), v)[1]))
        return bool(seen & names)

    def walk(node, guarded):
        if _is_barrier(node):
            if guarded:
                found.append(node)
        elif isinstance(node, tirx.IfThenElse):
            inner = guarded or reads(node.condition)
            walk(node.then_case, inner)
            if node.else_case is not None:
                walk(node.else_case, inner)
        elif isinstance(node, tirx.SeqStmt):
            for child in node.seq:
                walk(child, guarded)
        elif isinstance(node, (tirx.For, tirx.While, tirx.AttrStmt)):
            walk(node.body, guarded)
    walk(stmt, False)
    return found
