"""A stage of a schedule as a standalone Relax module, the thing a measured cost model times.

A stage is a list of groups of units of an :class:`~tvm_ios.graph.extract.Extraction`. Its
module is a ``main`` function whose parameters are the activations the stage reads (first,
counted by the ``num_input`` attribute) and the weights it reads (tensor constants of the
model are lifted to weight parameters too, so identical blocks of a model, whose weights
differ, get the same module and the same workload key). The body holds the units' bindings
group after group, plus the free bindings (concat, reshape) between units of the stage; it
returns every unit's output.

* one op or a sequential group: its bindings;
* a merge stage: that module rewritten by the operator-merge emission of the schedule
  passes (:func:`tvm_ios.passes.apply_schedule.apply_to_function` with a one-stage merge
  schedule), so what is measured is exactly what the rewrite emits;
* a concurrent stage of two or more groups, with ``engine="rprogram"`` (the default): the
  module carries a one-stage concurrent schedule and the attribute ``tvm_ios.stage_engine``;
  :func:`~tvm_ios.cost.stage_timing.prepare_stage` rewrites it with ``RProgramPass`` at build
  time, so the stage is timed as it will run: one rProgram on the CPU vDevice (llvm) or one
  persistent kernel (CUDA). With ``engine="sequential"`` its groups run back to back.

With a kernel database (``kernels``) the module also carries its path
(``tvm_ios.kernels``): the build applies its tuned kernels (serial ones inside the rProgram).

The workload key is the structural hash of ``main`` (names do not count) and the input and
weight shapes, plus a tag for the engine and kernels (:func:`stage_tag`); with the target and
device key it identifies a measurement in the log.
"""
from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from typing import Sequence

from tvm import relax

from .. import _tvm
from ..graph.extract import Extraction, extract
from ..passes.apply_schedule import apply_to_function
from ..schedule.merge import merge_plan
from ..schedule.schedule import Schedule, Stage
from .signature import StageSigner

__all__ = ["StageModule", "stage_module", "op_stages", "stage_description", "stage_tag",
           "ENGINE_ATTR", "KERNELS_ATTR", "RPROGRAM_TAG", "BALANCED_TAG", "CONCURRENT_TAGS"]

#: Module attributes read by :func:`~tvm_ios.cost.stage_timing.prepare_stage`.
ENGINE_ATTR = "tvm_ios.stage_engine"
KERNELS_ATTR = "tvm_ios.kernels"

logger = logging.getLogger(__name__)


@dataclass
class StageModule:
    """A stage ready to build: module, workload key, runtime inputs and a description.

    ``inputs`` are ``(shape, dtype)`` of the activations ``main`` takes first; weights come
    after them and are bound to random constants at build time (see :mod:`.measure`).
    ``description`` is plain data about the stage's ops (the XGBoost model's features).
    """

    mod: object
    key: str
    inputs: list = field(default_factory=list)
    description: dict = field(default_factory=dict)
    signature: str = ""


@_tvm.mutator
class _Remapper(_tvm.PyExprMutator):
    """Rewrites expressions with some variables replaced (the stage's new parameters)."""


def _build_function(ext: Extraction, bindings: list, outputs: list):
    """The standalone module (``main``) of the stage, and its activation inputs."""
    func = ext.func
    num_input = len(func.params)
    if func.attrs is not None and "num_input" in func.attrs:
        num_input = int(func.attrs["num_input"])
    weights_of_model = set(list(func.params)[num_input:])
    defined = {b.var for b in bindings}
    acts, weights, remapper = [], [], _Remapper()
    seen: dict = {}

    def visit(node):
        if node in seen:
            return
        if _tvm.is_tensor_constant(node):
            seen[node] = ("w", node)
        elif isinstance(node, relax.Var) and node not in defined:
            seen[node] = ("w" if node in weights_of_model else "a", node)
    for binding in bindings:
        relax.analysis.post_order_visit(binding.value, visit)
    for kind, node in seen.values():
        shape, dtype = _tvm.shape_of(node), _tvm.dtype_of(node)
        if shape is None:
            raise ValueError(f"stage input {node} has no static tensor shape")
        (acts if kind == "a" else weights).append((node, shape, dtype))
    params = [relax.Var(f"x{i}", relax.TensorType(s, d)) for i, (_, s, d) in enumerate(acts)]
    params += [relax.Var(f"w{i}", relax.TensorType(s, d)) for i, (_, s, d) in enumerate(weights)]
    builder = relax.BlockBuilder()
    with builder.function("main", params, attrs={"num_input": len(acts)}):
        with builder.dataflow():
            for (old, _, _), new in zip(acts + weights, params):
                if isinstance(old, relax.Var):
                    remapper.set_var_remap(old, new)
            value = _emit_bindings(builder, remapper, bindings, acts + weights, params)
            out = builder.emit_output(relax.Tuple([value[v] for v in outputs]))
        builder.emit_func_output(out)
    return builder.get(), [(s, d) for _, s, d in acts]


def _emit_bindings(builder, remapper, bindings, inputs, params) -> dict:
    constants = {old: new for (old, _, _), new in zip(inputs, params)
                 if _tvm.is_tensor_constant(old)}
    emitted = {}
    for binding in bindings:
        value = binding.value
        if constants:
            value = _replace_constants(value, constants)
        new_var = builder.emit(remapper.visit_expr(value), _tvm.var_name(binding.var))
        remapper.set_var_remap(binding.var, new_var)
        emitted[binding.var] = new_var
    return emitted


def _replace_constants(expr, constants: dict):
    """``expr`` with lifted constants replaced by their parameters (calls one level deep)."""
    if isinstance(expr, relax.Call):
        args = [constants.get(a, a) if _tvm.is_tensor_constant(a) else a for a in expr.args]
        return relax.Call(expr.op, args, expr.attrs, expr.ty_args)
    return expr


def stage_description(graph, groups: Sequence[Sequence[int]], merge: bool) -> dict:
    """Plain-data description of a stage's ops (kind, FLOPs, bytes, shape, conv attrs)."""
    keys = ("kernel", "channels", "in_channels", "strides", "groups")
    return {"strategy": "merge" if merge else "concurrent",
            "groups": [[{"kind": graph.nodes[i].kind, "flops": int(graph.nodes[i].flops),
                         "bytes": int(graph.nodes[i].bytes),
                         "shape": list(graph.nodes[i].shape),
                         **{k: graph.nodes[i].attrs[k] for k in keys
                            if k in graph.nodes[i].attrs}}
                        for i in sorted(group)] for group in groups]}


#: The tag of a concurrent stage run as an rProgram, by engine: ``rprogram`` (groups on their
#: own vEUs) and ``balanced`` (``RProgramPass(balance=True)``: ops may be cut into slices).
RPROGRAM_TAG = "-rp"
BALANCED_TAG = "-rp2"
CONCURRENT_TAGS = {"rprogram": RPROGRAM_TAG, "balanced": BALANCED_TAG}


def stage_tag(groups: Sequence[Sequence[int]], merge: bool, engine: str = "rprogram",
              kernels=None) -> str:
    """What, besides its bindings, tells how a stage runs: :data:`CONCURRENT_TAGS` for a
    concurrent stage run as an rProgram, ``-k<digest>`` for tuned kernels (database name and
    record counts, so a database tuned further gets its stages measured again)."""
    tag = CONCURRENT_TAGS.get(engine, "") if not merge and len(groups) > 1 else ""
    if kernels is not None:
        tag += "-k" + kernels.fingerprint
    return tag


def _concurrent(mod, ext: Extraction, signer: StageSigner, groups, order, engine: str):
    """``mod`` with the stage recorded as one concurrent stage of its own op names."""
    from ..passes.apply_schedule import record_schedule  # noqa: PLC0415  (passes import cost)

    emitted: list[int] = []
    for index in order:
        unit = signer.owner.get(index)
        if unit is not None and unit not in emitted:
            emitted.append(unit)
    inner = extract(mod["main"], name="main")
    if len(inner.graph) != len(emitted):
        logger.warning("stage %s: its module has %d ops, not %d; measured back to back",
                       ext.graph.names_of(emitted), len(inner.graph), len(emitted))
        return mod
    name = {unit: inner.graph.nodes[k].name for k, unit in enumerate(emitted)}
    stage = Stage([[name[i] for i in sorted(g)] for g in groups], "concurrent")
    return record_schedule(mod, "main", Schedule([stage])).with_attr(ENGINE_ATTR, engine)


def stage_module(ext: Extraction, groups: Sequence[Sequence[int]], merge: bool = False,
                 signer: StageSigner | None = None, engine: str = "rprogram",
                 kernels=None) -> StageModule:
    """Build the standalone module of a stage of ``ext.graph``.

    Parameters
    ----------
    ext : Extraction
        The model's function and its op graph.
    groups : sequence of sequences of int
        Node ids of ``ext.graph``, one list per group (a merge stage: one op per group).
    merge : bool
        Emit the stage as one merged operator (the ops must pass :func:`merge_plan`).
    signer : StageSigner, optional
        The model's signer (caches per-binding facts across stages); its signature of the
        stage is stored on the result.
    engine : {"rprogram", "balanced", "sequential"}
        How a concurrent stage of several groups runs (module docstring).
    kernels : KernelDB, optional
        Tuned kernels the stage's build applies.
    """
    ids = sorted(i for group in groups for i in group)
    if merge and merge_plan(ext.graph, ids) is None:
        raise ValueError(f"stage {ext.graph.names_of(ids)} cannot be merged")
    signer = signer or StageSigner(ext)
    order, outputs = signer.order(groups)
    bindings = [signer.bindings[i] for i in order]
    outputs = [signer.bindings[i].var for i in outputs]
    mod, inputs = _build_function(ext, bindings, outputs)
    if merge:
        mod = _merged(mod)
    tag = stage_tag(groups, merge, engine, kernels)
    if "-rp" in tag:
        mod = _concurrent(mod, ext, signer, groups, order, engine)
    if kernels is not None:
        mod = mod.with_attr(KERNELS_ATTR, str(kernels.path))
    key = workload_key(mod, inputs) + tag
    return StageModule(mod, key, inputs, stage_description(ext.graph, groups, merge),
                       signer.signature(groups, merge) + tag)


def op_stages(mod, target) -> list:
    """Each op of ``mod``'s graph alone as a measured stage builds it, before its kernels
    are applied (weights bound and folded, :func:`~.measure.prepare_stage`), one module per
    distinct stage signature.

    What a judge's sequential side runs (:mod:`.fallback`) where a group is one op: an op
    alone fuses otherwise than in the model (ResNeXt-29's last 1x1 convolution of a block
    with its bias only, where the model adds the shortcut into it), so a database tuned on
    the model's kernels alone holds no parallel kernel of it.
    """
    from .stage_timing import prepare_stage  # noqa: PLC0415  (measure imports this module)

    ext = extract(mod["main"])
    signer = StageSigner(ext)
    out: dict[str, object] = {}
    for node in range(len(ext.graph)):
        signature = signer.signature([[node]])
        if signature not in out:
            out[signature] = prepare_stage(stage_module(ext, [[node]], signer=signer,
                                                        engine="sequential").mod, target)
    return list(out.values())


def _merged(mod):
    """Rewrite the stage module's units into one merged operator."""
    inner = extract(mod["main"], name="main")
    names = [[node.name] for node in inner.graph.nodes]
    stage = Schedule([Stage(names, "merge")])
    return apply_to_function(mod, "main", inner, stage).without_attr("tvm_ios.schedules")


def workload_key(mod, inputs: Sequence) -> str:
    """Structural hash of ``mod['main']`` plus a digest of its parameter shapes."""
    shapes = [(_tvm.shape_of(p), _tvm.dtype_of(p)) for p in mod["main"].params]
    digest = hashlib.sha1(repr(shapes).encode()).hexdigest()[:8]
    return f"{_tvm.structural_hash(mod['main']) & (2 ** 64 - 1):016x}-{digest}"
