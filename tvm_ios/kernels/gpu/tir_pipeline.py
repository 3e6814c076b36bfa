"""TVM's own default TIR pipeline, cut where the rTask kernels are merged.

A persistent kernel is made of several scheduled kernels, each lowered by TVM up to and
including ``ThreadSync`` and ``MergeSharedMemoryAllocations`` (merging earlier fails:
"Cannot insert syncs inside condition"), then combined, then finished by the host/device
split and the packed API. Rather than a copy of TVM's pass list, both halves run TVM's
registered default pipeline (``tvm.tirx.get_tir_pipeline("default")``) under a pass
instrument that skips the passes of the other half:

* :func:`lower_to_merge` runs the *head* (every pass before ``CUT``), then our
  :func:`~tvm_ios.kernels.gpu.roperator.pad_small_shared` and TVM's ``CUT`` pass itself;
* :func:`build_merged` runs the *tail* (every pass after ``CUT``) and TVM's finalisation
  passes through ``tvm.tirx.build``.

Where TVM changes its pipeline the halves change with it. :func:`pipeline_halves` reports
the two halves (a test checks that the passes the merge needs are in the head and that the
tail holds only the passes this module has been checked with). No pipeline is registered
globally.
"""
from __future__ import annotations

import logging

import tvm
from tvm.ir.instrument import pass_instrument

from ... import _tvm

__all__ = ["CUT", "lower_to_merge", "build_merged", "pipeline_halves", "PipelineCutError"]

logger = logging.getLogger(__name__)

#: The pass after which rTask kernels are merged (it runs in the head, per kernel).
CUT = "s_tir.MergeSharedMemoryAllocations"
#: The name of the module pass TVM's pipeline factory returns, and of the Sequential in it.
_PIPELINE = "_pipeline"
_SPLIT = "tirx.SplitHostDevice"
_CONTAINERS = ("sequential", _PIPELINE)


class PipelineCutError(RuntimeError):
    """TVM's default TIR pipeline no longer has the pass the merge is cut at."""


@pass_instrument
class _Half:
    """Inside TVM's pipeline, skips the passes on one side of ``CUT`` (and ``CUT`` itself);
    passes outside it (``tvm.tirx.build``'s target binding, host/device filters,
    finalisation) run as usual."""

    def __init__(self, head: bool):
        self.head, self.seen, self.inside = head, False, False
        self.found = False  # the cut itself was met (not only the host/device split)
        self.ran: list[str] = []

    def should_run(self, mod, info):
        name = info.name
        if name == _PIPELINE:
            self.inside = True
        if not self.inside or name in _CONTAINERS:
            return True
        if name == CUT:
            self.seen = self.found = True
            return False
        if name == _SPLIT:  # the host/device split never runs before the merge
            self.seen = True
        run = (not self.seen) if self.head else self.seen
        if run:
            self.ran.append(name)
        return run

    def run_after_pass(self, mod, info):
        if info.name == _PIPELINE:
            self.inside = False


def _default_pipeline():
    return _tvm.tirx.get_tir_pipeline("default")[0]


def lower_to_merge(mod, config: dict | None = None, before_cut=()):
    """``mod`` lowered by TVM's default pipeline up to and including ``CUT``.

    Parameters
    ----------
    mod : IRModule
        Scheduled PrimFuncs with their target bound.
    config : dict, optional
        PassContext configuration (e.g. ``{"tirx.merge_static_smem": True}``).
    before_cut : sequence of Pass
        Passes to run between the head and ``CUT``.
    """
    half = _Half(head=True)
    with tvm.transform.PassContext(config=config or {}, instruments=[half]):
        mod = _default_pipeline()(mod)
    if not half.found:
        raise PipelineCutError(f"TVM's default TIR pipeline has no pass {CUT}; the rTask "
                               f"kernels cannot be cut before their host/device split (it "
                               f"ran {half.ran})")
    cut = _tvm.s_tir.transform.MergeSharedMemoryAllocations()
    with tvm.transform.PassContext(config=config or {}):
        return tvm.transform.Sequential([*before_cut, cut])(mod)


def build_merged(mod, target, arg_checks: bool = True):
    """Build already merged kernels: TVM's pipeline after ``CUT``, its finalisation, codegen.

    Without ``arg_checks`` the host stubs keep none of the packed API's assertions (TVM's
    ``tirx.disable_assert``): no check of each argument's type, shape, dtype, device and offset.
    Returns the runtime module of ``tirx.build``.
    """
    half = _Half(head=False)
    config = {} if arg_checks else {"tirx.disable_assert": True}
    with tvm.transform.PassContext(config=config, instruments=[half]):
        lib = _tvm.tirx.build(mod, target=target, pipeline="default")
    if not half.found:
        raise PipelineCutError(f"TVM's default TIR pipeline has no pass {CUT}: its tail "
                               "cannot be told from the lowering already done")
    logger.debug("pipeline tail: %s", half.ran)
    return lib


def pipeline_halves(target="nvidia/nvidia-h100") -> tuple[list[str], list[str]]:
    """The pass names TVM's default pipeline runs before and after ``CUT`` (on a trivial
    function for ``target``): what :func:`lower_to_merge` and :func:`build_merged` run."""
    T = _tvm.T

    @T.prim_func
    def probe(a: T.Buffer((4,), "float32")):
        for i in range(4):
            a[i] = a[i] + T.float32(1)

    mod = _tvm.tirx.transform.BindTarget(_tvm.make_target(target))(tvm.IRModule({"probe": probe}))
    head, tail = _Half(head=True), _Half(head=False)
    for half in (head, tail):
        with tvm.transform.PassContext(instruments=[half]):
            _default_pipeline()(mod)
    return head.ran, tail.ran
