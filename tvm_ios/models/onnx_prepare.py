"""Make an ONNX file as users have it into what TVM's Relax frontend reads well.

Two things real files do that the frontend (``relax.frontend.onnx``, TVM 0.27) does not
expect, both fixed here on the ONNX graph before conversion:

* **Initializers listed as graph inputs.** IR version 3 (ONNX < 1.3) required every
  initializer to appear in ``graph.input`` too, and exporters of that time did so. The
  frontend then makes each such weight a parameter twice. Here an initializer is a weight,
  never a runtime input: it is removed from ``graph.input``. (Later IR versions allow an
  input with an initializer as an overridable default; tvm-ios does not support that.)
* **Weights computed by constant subgraphs** (``ConstantOfShape`` of a shape initializer,
  ``Constant`` nodes, a ``Mul`` of two initializers, ...). Every node whose inputs are all
  constants is evaluated once, in one :class:`onnx.reference.ReferenceEvaluator` run of
  the constant part of the graph, and its outputs become initializers.

Why fold on the ONNX graph rather than with Relax's ``FoldConstant`` after import: the
reference evaluator is ONNX's own definition of each operator, so the folded weights are
what any ONNX runtime computes; the frontend then sees plain initializers with static
shapes (a ``Reshape`` whose shape is computed stays static); and weights stay separate
parameters of ``main`` (the contract of :func:`tvm_ios.models.get`), whereas
``FoldConstant`` only folds what is already a Relax constant, i.e. after the weights were
bound into the module, and builds and runs one TVM kernel per folded call (tens of seconds
for ResNet-50's batch norms on this machine).

Nodes that are never folded: those with no input other than ``Constant``, random ones
(``RandomNormal``, ...), those with subgraphs (``If``, ``Loop``, ``Scan``) and those of
domains other than the default one.
"""
from __future__ import annotations

import logging

import numpy as np

__all__ = ["prepare", "strip_initializer_inputs", "fold_constants"]

logger = logging.getLogger(__name__)

_NOT_FOLDED = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
               "Multinomial", "Bernoulli", "If", "Loop", "Scan", "SequenceMap"}


def prepare(model):
    """A copy of ``model`` with initializers out of ``graph.input`` and constants folded."""
    onnx = import_onnx()
    out = onnx.ModelProto()
    out.CopyFrom(model)
    strip_initializer_inputs(out)
    fold_constants(out)
    return out


def strip_initializer_inputs(model) -> int:
    """Remove from ``graph.input`` the names that are initializers; returns how many."""
    graph = model.graph
    weights = {init.name for init in graph.initializer}
    keep = [i for i in graph.input if i.name not in weights]
    removed = len(graph.input) - len(keep)
    if removed:
        del graph.input[:]
        graph.input.extend(keep)
        model.ir_version = max(model.ir_version, 4)  # IR 4 dropped the listing rule
        logger.info("ONNX: %d initializers were also listed as graph inputs; they are "
                    "weights", removed)
    return removed


def _foldable(node, known: set) -> bool:
    if node.domain not in ("", "ai.onnx") or node.op_type in _NOT_FOLDED:
        return False
    if any(attr.g.node or attr.graphs for attr in node.attribute):
        return False
    inputs = [name for name in node.input if name]
    if not inputs:
        return node.op_type == "Constant"
    return all(name in known for name in inputs)


def fold_constants(model) -> int:
    """Evaluate the nodes of ``model`` whose inputs are all constants, in place; their
    outputs become initializers (those other nodes or the outputs use). Returns the number
    of nodes folded."""
    onnx = import_onnx()
    from onnx import helper, numpy_helper
    from onnx.reference import ReferenceEvaluator

    graph = model.graph
    known = {init.name for init in graph.initializer}
    folded, kept = [], []
    for node in graph.node:  # topological order (an ONNX requirement)
        if _foldable(node, known):
            folded.append(node)
            known.update(name for name in node.output if name)
        else:
            kept.append(node)
    if not folded:
        return 0
    produced = {name for node in folded for name in node.output if name}
    needed = {name for node in kept for name in node.input} | {o.name for o in graph.output}
    wanted = sorted(produced & needed)
    values = {}
    if wanted:
        sub = helper.make_graph(folded, "constants", [],
                                [helper.make_value_info(n, onnx.TypeProto()) for n in wanted],
                                list(graph.initializer))
        sub_model = helper.make_model(sub, opset_imports=list(model.opset_import),
                                      ir_version=model.ir_version)
        values = dict(zip(wanted, ReferenceEvaluator(sub_model).run(None, {})))
    used = needed - produced
    initializers = [init for init in graph.initializer if init.name in used]
    initializers += [numpy_helper.from_array(np.asarray(values[n]), n) for n in wanted]
    del graph.node[:]
    graph.node.extend(kept)
    del graph.initializer[:]
    graph.initializer.extend(initializers)
    logger.info("ONNX: folded %d constant nodes into %d initializers", len(folded),
                len(wanted))
    return len(folded)


def import_onnx():
    try:
        import onnx
    except ImportError as err:
        raise ImportError("tvm_ios.models.from_onnx needs the 'onnx' package: "
                          "pip install onnx (or tvm-ios[onnx])") from err
    return onnx
