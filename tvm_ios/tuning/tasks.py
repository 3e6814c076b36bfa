"""Which kernels a build calls, as meta_schedule tasks: one set per variant of a
:class:`~.kernel_db.KernelDB` (:mod:`.tuning` tunes them).

* ``parallel`` and ``packed``: the fused PrimFuncs of the sequential build (``extract_tasks``
  on the module after :func:`~.tuned_build.fuse_for_tuning`), and those of the scheduled
  builds passed as ``also`` (a schedule that moves ops changes how TVM fuses them: the sum of
  two convolutions fuses into whichever runs later), each workload once;
* ``serial`` and ``serial-packed``: every op (and glue op) lowered alone as
  :func:`~.tvm_kernels.lower_bindings` lowers it for the CPU vDevice.

The packed variants mark the weights layout-free (:func:`~.prepack.mark_layout_free`).
"""
from __future__ import annotations

import fnmatch
import logging

import tvm

from .. import _tvm
from ..graph.extract import extract
from .kernel_db import KernelDB
from ..kernels.prepack import is_marked, is_rprogram, mark_layout_free
from ..kernels.program_regions import augment
from ..kernels.tuned_build import fuse_for_tuning
from ..kernels.tvm_kernels import UnsupportedKernel, lower_bindings

__all__ = ["ANCHORS", "kernel_tasks", "untuned_tasks", "chosen_tasks", "task_records"]

logger = logging.getLogger(__name__)
ms = _tvm.ms


def _serial_funcs(mod, packed: bool = False) -> dict:
    """structural hash -> [PrimFunc, count, name] of every op's vDevice kernels (``packed``:
    those with weights, marked layout-free)."""
    ext = extract(mod["main"], name="main")
    graph, members = augment(ext)
    bindings = list(ext.func.body.blocks[ext.block_index].bindings)
    funcs: dict = {}
    for node in graph.nodes:
        unit = [bindings[i] for i in members[node.name]]
        try:
            steps = lower_bindings(unit, unit[-1].var, mark_layout_free if packed else None)
        except UnsupportedKernel as err:
            logger.info("op %s has no vDevice kernel: %s", node.name, err)
            continue
        for step in steps:
            if packed and not is_marked(step.func):
                continue
            name = str(step.func.attrs.get("global_symbol", node.name)) \
                if step.func.attrs is not None else node.name
            func = step.func.with_attr("global_symbol", "main")
            key = _tvm.structural_hash(func)
            funcs.setdefault(key, [func, 0, name])[1] += 1
    return funcs


#: Kernels worth tuning by default: the arithmetic ones (pools, concats, element-wise ops
#: stay as TVM lowers them; on 2 shared cores each task costs 15-40 s of search).
ANCHORS = ("conv2d", "matmul", "dense")


def kernel_tasks(mod, kernels: KernelDB, variant: str, anchors_only: bool = True,
                 also=()) -> list:
    """meta_schedule ``ExtractedTask`` s of a variant for ``mod`` (weights bound); with
    ``anchors_only`` just those whose kernel holds a convolution or a matmul. ``also``:
    more Relax modules (a scheduled build's, :meth:`~tvm_ios.relax_pipeline.Pipeline.
    before_kernels`) whose fused kernels the sequential variants tune too."""
    tasks = _tasks(mod, kernels, variant, also)
    if anchors_only:
        tasks = [t for t in tasks if any(a in t.task_name or a in str(t.mod) for a in ANCHORS)]
    return tasks


def _fused_tasks(modules, target, packed: bool) -> list:
    """The tasks of each module as its build fuses it, each workload once (rProgram
    functions left out: their kernels are the serial variants')."""
    tasks, seen, names = [], set(), set()
    for mod in modules:
        fused = fuse_for_tuning(mod, target)
        fused = mark_layout_free(fused) if packed else fused
        for task in ms.relax_integration.extract_tasks(fused, target):
            func, key = task.dispatched[0]["main"], _tvm.structural_hash(task.dispatched[0])
            if key in seen or is_rprogram(func):
                continue
            seen.add(key)
            name = task.task_name if task.task_name not in names else \
                f"{task.task_name}_{len(tasks)}"  # (a name the module before gave another)
            names.add(name)
            tasks.append(task if name == task.task_name else ms.ExtractedTask(
                name, task.mod, task.target, task.dispatched, task.weight))
    return tasks


def _tasks(mod, kernels: KernelDB, variant: str, also=()) -> list:
    target = kernels.target_for(variant)
    if variant in ("parallel", "packed"):
        return _fused_tasks([mod, *also], target, variant == "packed")
    tasks = []
    packed = variant == "serial-packed"
    for k, (func, count, name) in enumerate(_serial_funcs(mod, packed).values()):
        task_mod = tvm.IRModule({"main": func})
        task_name = f"{variant.replace('-', '_')}_{k}_{name}"
        tasks.append(ms.ExtractedTask(task_name, task_mod, target, [task_mod], count))
    return tasks


def untuned_tasks(tasks, kernels: KernelDB, variant: str) -> list:
    """The tasks of ``tasks`` the variant's database holds no tuning record for."""
    if not kernels.has(variant):
        return list(tasks)
    db, target = kernels.database(variant, writable=True), kernels.target_for(variant)
    return [t for t in tasks
            if db.query_tuning_record(t.dispatched[0], target, t.task_name) is None]


def chosen_tasks(tasks, patterns=()) -> list:
    """The tasks whose name matches one of the shell-style ``patterns`` (``fused_conv2d7_*``;
    all of them where none is given). A pattern list that matches none is an error naming
    the tasks there are."""
    if not patterns:
        return list(tasks)
    out = [t for t in tasks if any(fnmatch.fnmatchcase(t.task_name, p) for p in patterns)]
    if not out:
        raise ValueError(f"no kernel matches {' '.join(patterns)}; the kernels are: "
                         + " ".join(sorted(t.task_name for t in tasks)))
    return out


def task_records(tasks, kernels: KernelDB, variant: str) -> int:
    """The measured records the variant's database holds for ``tasks``' workloads."""
    if not kernels.has(variant):
        return 0
    db, count = kernels.database(variant, writable=True), 0
    for task in tasks:
        func = task.dispatched[0]
        if db.has_workload(func):
            count += len(db.get_top_k(db.commit_workload(func), 1 << 30))
    return count
