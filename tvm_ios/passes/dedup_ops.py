"""``DedupOps``: an operator call that repeats another (same operator, same arguments, same
attributes) computed once.

Published multi-branch graphs repeat work: NASNet-A applies ReLU to a cell's adjusted input
once per separable branch that reads it (three times for ``left`` in a normal cell, twice for
``right``), ReLU to a cell's output once in each of the two cells that take it, and averages
``left`` twice in ``comb_iter_3``; RandWire's nodes apply ReLU to an input that other nodes
apply it to as well. At NASNet-A 64 px: 264 ReLUs of which 84 repeat one, 62 average and 8 max
pools of which 18 and 4 do; RandWire: 25 of 114 ReLUs and 3 of 383 additions. ONNX Runtime's
basic graph optimizations compute such calls once (``CommonSubexpressionElimination``); TVM's
default Relax pipeline does not, and each repeat is one more kernel call.

The pass runs TVM's ``relax.transform.EliminateCommonSubexpr`` (bindings whose value is a
pure call equal to an earlier one's become that one's variable), then ``CanonicalizeBindings``
(the uses of such a variable read the earlier one), and counts, by operator, the calls it
removed (:attr:`DedupOps.removed`). Every output is computed by the same arithmetic
as before, so the rewritten module's outputs equal the original's exactly. The op graph IOS
schedules is then smaller: a repeat is not a stage's op. What TVM fuses changes too (a
convolution whose output only its ReLUs read fuses the one ReLU left as its epilogue), so with
a kernel database the pass is kept only where the database holds those kernels
(:func:`dedup_for_kernels`).
"""
from __future__ import annotations

import collections
import logging

import tvm
from tvm import relax

from .. import _tvm
from .kernel_guard import kept_for_kernels, replays_last_run

__all__ = ["DedupOps", "dedup_for_kernels", "op_calls"]

logger = logging.getLogger(__name__)


def op_calls(mod) -> collections.Counter:
    """Calls of each Relax operator (by name) in the Relax functions of ``mod``."""
    counts: collections.Counter = collections.Counter()
    for _gv, func in mod.functions.items():
        if not isinstance(func, relax.Function):
            continue
        for block in getattr(func.body, "blocks", []):
            for binding in block.bindings:
                value = binding.value
                if isinstance(value, relax.Call) and isinstance(value.op, tvm.ir.Op):
                    counts[value.op.name] += 1
    return counts


@_tvm.module_pass(opt_level=0, name="tvm_ios.DedupOps")
class DedupOps:
    """Compute once every operator call that repeats an earlier one.

    Attributes
    ----------
    removed : dict of str to int
        Calls removed by the last run, by operator name (``{"relax.nn.relu": 84}``); empty
        when nothing repeated.

    Examples
    --------
    >>> seq = tvm.transform.Sequential([relax.transform.BindParams("main", params),
    ...                                 DedupOps(), IOSPass(cost)])
    """

    def __init__(self):
        self.removed: dict[str, int] = {}

    @replays_last_run
    def transform_module(self, mod, ctx):
        before = op_calls(mod)
        out = relax.transform.EliminateCommonSubexpr()(mod)  # (leaves ``b = a`` aliases)
        after = op_calls(out)
        self.removed = {op: n - after[op] for op, n in sorted(before.items()) if n > after[op]}
        if not self.removed:
            return mod
        out = relax.transform.CanonicalizeBindings()(out)  # each use of ``b`` now ``a``
        logger.info("DedupOps: %d repeated calls computed once (%s)", self.total,
                    ", ".join(f"{op.replace('relax.', '')} {n}" for op, n in
                              self.removed.items()))
        return out

    @property
    def total(self) -> int:
        """Calls removed by the last run."""
        return sum(self.removed.values())


def dedup_for_kernels(mod, kernels=None, cover: int = 0):
    """``DedupOps()`` where ``mod`` repeats an operator call, else None; with a kernel
    database (and no ``cover`` trials to tune what it lacks at build time) only where the
    database holds the deduplicated graph's kernels as well as the original's (a warning
    says where it does not: :func:`~.kernel_guard.kept_for_kernels`)."""
    dedup = DedupOps()
    deduped = dedup(mod)
    if not dedup.removed:
        return None
    return kept_for_kernels(dedup, mod, deduped, kernels, cover,
                            "the kernels fused once repeated calls are computed once",
                            "repeated calls kept")
