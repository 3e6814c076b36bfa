"""rTasks that are slices of a tuned parallel loop: one op cut across the vEUs of a CPU rProgram.

A tuned CPU kernel (the database's *parallel* variant, tuned for all the cores) usually is one
``parallel`` loop nest under its root block: TVM's thread pool hands each worker a contiguous
range of that loop's iterations, and iterations are independent (that is what ``parallel``
promises). :func:`slice_kernel` makes rTask ``index`` of ``count`` of such a kernel: the same
body with the loop made serial and only the ``index``-th of ``count`` near-equal ranges run. The
slices of one op together compute exactly what the kernel computes; a consumer waits for all of
them (the policy's barriers).

A kernel is *sliceable* (:func:`sliceable`) when its root block holds exactly one loop, that
loop is ``parallel`` and it has at least ``count`` iterations; anything else (two loop nests, a
serial nest, a kernel of several steps) runs whole in slice 0, and the other slices are empty.
Each slice is a fresh copy (its own buffers and variables), so the slices of one op can be
inlined side by side into one PrimFunc.
"""
from __future__ import annotations

import logging

from ..._tvm import s_tir, tirx
from ..roperator import SLICES
from ..tir_util import fresh

__all__ = ["SLICES", "sliceable", "slice_kernel", "slice_range"]

logger = logging.getLogger(__name__)


def _root(func):
    """The root block of a block-style PrimFunc, or None."""
    body = func.body
    return body.block if isinstance(body, s_tir.SBlockRealize) else None


def _loop(func):
    """The kernel's only top-level loop if it is ``parallel``, else None."""
    root = _root(func)
    if root is None:
        return None
    body = root.body
    if isinstance(body, tirx.SeqStmt):
        if len(body.seq) != 1:
            return None
        body = body.seq[0]
    if isinstance(body, tirx.For) and body.kind == tirx.ForKind.PARALLEL:
        return body
    return None


def sliceable(func, count: int) -> bool:
    """Whether ``func`` is one ``parallel`` loop nest of at least ``count`` iterations."""
    loop = _loop(func)
    if loop is None or not isinstance(loop.extent, tirx.IntImm):
        return False
    return isinstance(loop.min, tirx.IntImm) and int(loop.extent) >= count


def slice_range(extent: int, index: int, count: int) -> tuple[int, int]:
    """``[begin, end)`` of slice ``index`` of ``count`` over ``extent`` iterations (the first
    ``extent % count`` slices get one iteration more)."""
    if not 0 <= index < count:
        raise ValueError(f"slice {index} of {count} does not exist")
    base, extra = divmod(extent, count)
    begin = index * base + min(index, extra)
    return begin, begin + base + (index < extra)


def slice_kernel(func, index: int, count: int):
    """rTask ``index`` of ``count`` of ``func``: its parallel loop made serial over one range.

    The loop keeps its full range and its body is guarded by ``begin <= i < end``: with the
    loop cut to start at a constant ``begin`` instead, LLVM vectorized every slice but the
    first very differently from the kernel TVM tuned (4x slower on an Inception V3 1x1
    convolution here); under the guard each slice runs as fast as its share of the tuned
    kernel. The guard costs one comparison per skipped iteration.

    Parameters
    ----------
    func : tirx.PrimFunc
        A kernel for which :func:`sliceable` holds.
    index, count : int
        Which slice, of how many.

    Returns
    -------
    tirx.PrimFunc
        A fresh copy of ``func`` computing iterations ``slice_range(extent, index, count)`` of
        its parallel loop, serially.
    """
    if not sliceable(func, count):
        raise ValueError(f"kernel is not one parallel loop of at least {count} iterations")
    func = fresh(func)
    loop = _loop(func)
    begin, end = slice_range(int(loop.extent), index, count)
    dtype = str(loop.extent.ty)
    var, first = loop.loop_var, int(loop.min)
    inside = tirx.all(var >= tirx.IntImm(dtype, first + begin),
                      var < tirx.IntImm(dtype, first + end))
    serial = tirx.For(var, loop.min, loop.extent, tirx.ForKind.SERIAL,
                      tirx.IfThenElse(inside, loop.body, None), loop.thread_binding,
                      loop.annotations)
    root = _root(func)
    block = s_tir.SBlock(root.iter_vars, root.reads, root.writes, root.name_hint, serial,
                         root.init, root.alloc_buffers, root.match_buffers, root.annotations)
    realize = func.body
    return func.with_body(s_tir.SBlockRealize(list(realize.iter_values), realize.predicate,
                                              block))
