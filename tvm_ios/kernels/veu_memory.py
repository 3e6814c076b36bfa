"""vEU-local tensors of an rProgram: one scratch arena per vEU, space reused by liveness.

A tensor written and read only by the rTasks of one vEU never has to leave that vEU's fast
memory (GraphTurbo's LB scope for an instance output whose consumer runs on the same
core, and the intermediate tensors inside an instance). :func:`pack` gives every such
tensor an offset in its vEU's arena: tensors live from the entry that writes them to the
last entry that reads them, and space is reused first-fit once a tensor is dead (the
paper's Section 4.3 memory reuse). The backends turn the offsets into buffer views: the CPU
vDevice over one workspace arena holding every vEU's region one after another
(:func:`cpu_views`), CUDA over a shared-memory buffer each block has to itself.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

import tvm

from .. import _tvm
from .._tvm import tirx

__all__ = ["ScratchPlan", "pack", "program_events", "cpu_views", "shared_views", "at_arena",
           "ALIGN", "STATIC_SHARED_BYTES"]

logger = logging.getLogger(__name__)

#: Static shared memory a CUDA block may declare (CUDA's limit; the rTasks' own shared
#: memory is dynamic, beside it): the most a vEU keeps there.
STATIC_SHARED_BYTES = 48 * 1024
ALIGN = 16  #: offsets are multiples of 16 elements (64 bytes of float32: a cache line)


@dataclass
class ScratchPlan:
    """Offsets of vEU-local tensors: ``offsets[key] = (veu, element offset)``."""

    offsets: dict = field(default_factory=dict)
    sizes: list = field(default_factory=list)  # elements of each vEU's region

    def base(self, veu: int) -> int:
        """Start of ``veu``'s region in an arena holding all regions in vEU order."""
        return sum(self.sizes[:veu])

    @property
    def total(self) -> int:
        """Elements of an arena holding every vEU's region."""
        return sum(self.sizes)


def _round(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def pack(events: list[list[tuple]], elements: dict) -> ScratchPlan:
    """First-fit offsets of the local tensors of every vEU.

    Parameters
    ----------
    events : list of list of (writes, reads)
        Per vEU, its steps in execution order, each with the keys it writes and reads.
    elements : dict
        Key of every local tensor -> number of elements. Keys not in it are ignored.

    Raises
    ------
    ValueError
        When a local tensor is touched by two vEUs.
    """
    plan = ScratchPlan(sizes=[0] * len(events))
    owner: dict = {}
    for v, steps in enumerate(events):
        live: dict = {}
        for t, (writes, reads) in enumerate(steps):
            for key in list(writes) + list(reads):
                if key not in elements:
                    continue
                if owner.setdefault(key, v) != v:
                    raise ValueError(f"scratch tensor {key!r} is used by vEUs {owner[key]} "
                                     f"and {v}; only a tensor of one vEU can be local")
                start, _ = live.get(key, (t, t))
                live[key] = (start, t)
        plan.sizes[v] = _first_fit(live, elements, plan.offsets, v)
    return plan


def _first_fit(live: dict, elements: dict, offsets: dict, veu: int) -> int:
    """Place intervals by start time at the lowest free offset; returns the region size."""
    placed: list[tuple[int, int, int]] = []  # (offset, size, last use)
    top = 0
    for key, (start, end) in sorted(live.items(), key=lambda kv: (kv[1][0], -elements[kv[0]])):
        size = _round(elements[key])
        busy = sorted((o, s) for o, s, last in placed if last >= start)
        offset = 0
        for o, s in busy:
            if offset + size <= o:
                break
            offset = max(offset, o + s)
        placed.append((offset, size, end))
        offsets[key] = (veu, offset)
        top = max(top, offset + size)
    return top


def program_events(program, touches: dict) -> list[list[tuple]]:
    """The ``events`` of :func:`pack` for a program whose op ``o`` writes and reads the
    keys ``touches[o] = (writes, reads)`` (each of its rTasks)."""
    return [[touches[t.op] for t in tasks if t.kind == "compute"] for tasks in program.prog]


def shared_views(plan: ScratchPlan, buffers: dict, dtype: str):
    """A static shared-memory buffer each GPU block (vEU) has to itself and a view for every
    packed tensor (its offset in its vEU's allocation: every block uses the same buffer).

    Returns ``(kept, views)``. The kernels' bodies are lowered already (TVM applies a
    buffer's ``elem_offset`` while it flattens buffers, before the cut): a body gets its
    views as buffers and :func:`at_arena` turns their accesses into ``kept``'s.
    """
    kept = tirx.decl_buffer((max(max(plan.sizes, default=0), 1),), dtype, "rp_kept",
                            scope="shared")
    views = {}
    for key, (_, offset) in plan.offsets.items():
        buf = buffers[key]
        views[key] = tirx.decl_buffer(buf.shape, buf.dtype, f"{buf.name}_kept",
                                      elem_offset=offset, scope="shared")
    return kept, views


def _shifted(index, offset, lanes: int = 1):
    """A flat ``index`` (a scalar, a ``Ramp`` or another vector of them) of a buffer of
    ``lanes``-wide elements as one of the arena's scalar elements, moved by ``offset``."""
    width = _tvm.DataType(str(index.ty.dtype)).lanes
    if lanes > 1 and width == 1:  # one element of a vector-typed buffer
        index = tirx.Ramp(index * tirx.const(lanes, str(index.ty.dtype)), 1, lanes)
        width = lanes
    scalar = str(_tvm.DataType(str(index.ty.dtype)).with_lanes(1))
    if str(offset.ty.dtype) != scalar:
        offset = tirx.Cast(scalar, offset)
    if isinstance(index, tirx.Ramp):
        return tirx.Ramp(index.base + offset, index.stride, index.lanes)
    return index + (tirx.Broadcast(offset, width) if width > 1 else offset)


def _lanes(buffer) -> int:
    return _tvm.DataType(str(buffer.dtype)).lanes


def _viewed(decl, views: dict):
    """The view whose data the ``DeclBuffer`` ``decl`` declares a buffer over, or None."""
    data = decl.data
    if isinstance(data, tvm.ir.expr.Call) and data.op.name == "tirx.buffer_data":
        return next((v for v in views if v.same_as(data.args[0])), None)
    return None


def at_arena(body, views: list, arena):
    """``body`` with every load and store of a view of ``views``, or of a buffer the body
    declares over a view's data (the flattened buffers of a lowered kernel), made one of
    ``arena`` at the view's ``elem_offset`` (a constant, or a variable bound before the
    body); those declarations go."""
    views = {v: v.elem_offset for v in views}
    if not views:
        return body

    def alias(decl):
        view = _viewed(decl, views)
        if view is not None:
            aliases[decl.buffer] = views[view]
        return decl
    aliases: dict = {}
    _tvm.structural_map(body, (tirx.stmt.DeclBuffer, alias))
    views.update(aliases)

    def drop(decl):
        return tirx.Evaluate(tirx.IntImm("int32", 0)) if decl.buffer in views else decl

    def load(node):
        offset = views.get(node.source)
        if offset is None:
            return node
        (index,) = node.indices
        return tirx.BufferLoad(arena, [_shifted(index, offset, _lanes(node.source))])

    def store(node):
        offset = views.get(node.buffer)
        if offset is None:
            return node
        (index,) = node.indices
        return tirx.BufferStore(arena, node.value, [_shifted(index, offset,
                                                            _lanes(node.buffer))])
    return _tvm.structural_map(body, [(_tvm.TensorLoad, load), (tirx.stmt.BufferStore, store),
                                      (tirx.stmt.DeclBuffer, drop)])


def cpu_views(plan: ScratchPlan, buffers: dict, dtype: str):
    """The workspace arena of the CPU vDevice and a view for every packed tensor.

    Returns ``(arena, views, decls)``: the arena buffer (allocated by the kernel), key ->
    view buffer (same shape as the tensor's buffer, at its vEU's base plus its offset) and
    the ``DeclBuffer`` statements binding the views to the arena.
    """
    arena = tirx.decl_buffer((max(plan.total, 1),), dtype, "rp_veu_scratch")
    views, decls = {}, []
    for key, (veu, offset) in plan.offsets.items():
        buf = buffers[key]
        view = tirx.decl_buffer(buf.shape, buf.dtype, f"{buf.name}_v{veu}",
                                elem_offset=plan.base(veu) + offset)
        views[key] = view
        decls.append(tirx.DeclBuffer(view, data=arena.data))
    return arena, views, decls
