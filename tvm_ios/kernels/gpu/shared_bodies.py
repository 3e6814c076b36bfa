"""Ops of one kernel share one call in a persistent kernel: the tensors are chosen by op.

GraphTurbo's instances repeat a few kernels on other tensors: Inception V3 at 299 px is
10 734 ops of 377 distinct kernels. Each distinct kernel is one device function
(:mod:`~tvm_ios.kernels.gpu.device_functions`); here the ops of a program that run one
lowered kernel (:attr:`~tvm_ios.kernels.gpu.roperator.GPUROperator.kernel`, the same
grain, tensors in the same memory) get consecutive op ids and one call; each of its
arguments is bound, before the call, to the tensor of the entry's op:

* tensors in global memory: a data pointer, ``Select(op == i, a_i, ...)``;
* views into the block's kept shared memory (GraphTurbo's LB scope): an element offset into
  the one arena, chosen the same way.

Only a parameter whose tensor differs between the ops is chosen; the others keep their
buffer. A group whose parameters differ in shape or type keeps one call per op.
"""
from __future__ import annotations

import logging

from ... import _tvm
from ..tir_util import i32, seq

__all__ = ["body_groups", "op_bodies"]

logger = logging.getLogger(__name__)
tirx = _tvm.tirx


def _scope(buf) -> str:
    return str(buf.scope())


def body_groups(ops, rops: dict, args_of: dict, bufs: dict) -> list[list[str]]:
    """``ops`` in groups that can share one body, in first-op order: the same lowered kernel
    and grain, each parameter's tensors in one memory scope."""
    groups = {}
    for op in ops:
        rop = rops[op]
        key = (rop.kernel, rop.grain, tuple(_scope(bufs[k]) for k in args_of[op]))
        groups.setdefault(key if rop.kernel is not None else op, []).append(op)
    return list(groups.values())


def _chosen(op_var, ids: list, values: list, select=tirx.Select):
    """``values[j]`` where ``op_var == ids[j]`` (the last one otherwise)."""
    value = values[-1]
    for i, v in zip(reversed(ids[:-1]), reversed(values[:-1])):
        value = select(op_var == i32(i), v, value)
    return value


def _same_shape(bufs) -> bool:
    first = bufs[0]
    return all(b.dtype == first.dtype and len(b.shape) == len(first.shape) and all(
        int(x) == int(y) for x, y in zip(b.shape, first.shape)) for b in bufs)


def _same_view(a, b) -> bool:
    """Two views of one offset into the kept arena (each tensor has its own view)."""
    return _scope(a) != "global" and _scope(a) == _scope(b) and isinstance(
        a.elem_offset, tirx.IntImm) and isinstance(b.elem_offset, tirx.IntImm) and int(
        a.elem_offset) == int(b.elem_offset) and _same_shape([a, b])


def _parameters(group, ids, args_of, bufs, op_var, arena, pointers):
    """``(statements, buffers)``: the group's parameters bound to the entry's op's tensors,
    or None where they differ in shape or type, or are global tensors and ``pointers`` is
    false."""
    stmts, out = [], []
    for p, keys in enumerate(zip(*(args_of[op] for op in group))):
        chosen = [bufs[k] for k in keys]
        first = chosen[0]
        if all(b.same_as(first) or _same_view(b, first) for b in chosen):
            out.append(first)
            continue
        if not _same_shape(chosen):
            return None
        name = f"{first.name}_op{p}"
        if _scope(first) == "global":
            if not pointers:
                return None
            data = tirx.Var(f"{name}_ptr", first.data.ty)
            buf = tirx.decl_buffer(first.shape, first.dtype, name)
            stmts += [tirx.Bind(data, _chosen(op_var, ids, [b.data for b in chosen],
                                              _tvm.select_pointer)),
                      tirx.DeclBuffer(buf, data=data)]
            out.append(buf)
            continue
        if arena is None or any(not isinstance(b.elem_offset, tirx.IntImm) for b in chosen):
            return None
        offset = _chosen(op_var, ids, [b.elem_offset for b in chosen])  # the call's argument
        out.append(tirx.decl_buffer(first.shape, first.dtype, name, elem_offset=offset,
                                    scope=_scope(first)))
    return stmts, out


def op_bodies(groups, op_ids: dict, rops: dict, args_of: dict, bufs: dict, op_var,
              run, arena=None, pointers: bool = True) -> list:
    """One guarded body per group of :func:`body_groups` (ids consecutive in ``op_ids``),
    or one per op where a group's tensors cannot be chosen by op.

    ``run(rop, buffers)`` gives the statement that runs an rOperator over ``buffers`` (a
    call of its device function: :class:`~tvm_ios.kernels.gpu.device_functions.
    DeviceFunctions`); ``arena`` is the kept shared-memory buffer the views point into;
    ``pointers``: whether global tensors may be chosen (as data pointers:
    ``sync.chosen_pointers``).
    """
    bodies = []
    for group in groups:
        ids = [op_ids[op] for op in group]
        chosen = None
        if len(group) > 1:
            chosen = _parameters(group, ids, args_of, bufs, op_var, arena, pointers)
        if chosen is None:
            bodies += [tirx.IfThenElse(op_var == i32(i), run(rops[op], [
                bufs[k] for k in args_of[op]]), None) for op, i in zip(group, ids)]
            continue
        stmts, buffers = chosen
        inside = (op_var >= i32(ids[0])) & (op_var <= i32(ids[-1]))
        bodies.append(tirx.IfThenElse(inside, seq(stmts + [run(rops[group[0]], buffers)]),
                                      None))
    logger.debug("%d ops, %d bodies", len(op_ids), len(bodies))
    return bodies
