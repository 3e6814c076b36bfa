"""An XGBoost model of stage latency, learned from measurement logs.

Features of a stage (from the plain-data description every log record carries, see
:func:`~.stage_module.stage_description`): group count, op count, merged or not, total /
largest / smallest group FLOPs and bytes, thread blocks and output elements (threads) in
total and of the widest group, op-type counts, and the roofline estimate itself. The model
learns ``log(latency)``. The roofline features model the device the records were measured
on (:func:`~.devices.preset_for_target` of their target); fitting a model on records of
another target is refused. Accuracy is MAPE and Spearman rank correlation on held-out
records: :func:`evaluate_by_model` holds out whole models (train on the others' logs, score
the stages the training logs do not hold), which is what predicting a new model asks;
:func:`train_and_evaluate` holds out a random share of one log, which says little about a
new model since the stages of one model are near-duplicates. It implements the
:class:`~tvm_ios.cost.pricing.CostModel` protocol.

Needs the ``xgboost`` package (``pip install tvm-ios[tune]`` installs the CPU build,
``xgboost-cpu``; both provide ``import xgboost``).
"""
from __future__ import annotations

import json
import logging
import math
import random
from pathlib import Path
from typing import Sequence

import numpy as np

from ..graph.opgraph import OpGraph
from ..schedule.merge import merge_plan
from .analytical import AnalyticalCostModel, Kernel
from ..hardware import DEVICES, preset_for_target
from .stage_module import stage_description

__all__ = ["XGBCostModel", "stage_features", "evaluate", "train_and_evaluate",
           "evaluate_by_model", "records_preset", "FEATURES"]

logger = logging.getLogger(__name__)

KINDS = ("conv2d", "depthwise", "grouped_conv", "sepconv", "pool", "matmul")
FEATURES = ("groups", "ops", "merged", "flops", "bytes", "max_group_flops", "max_group_bytes",
            "min_group_flops", "blocks", "max_group_blocks", "threads", "max_group_threads",
            "roofline_us") + tuple(f"n_{k}" for k in KINDS + ("other",))
_LOGGED = {"flops", "bytes", "max_group_flops", "max_group_bytes", "min_group_flops",
           "blocks", "max_group_blocks", "threads", "max_group_threads", "roofline_us"}


def _import_xgboost():
    try:
        import xgboost  # noqa: PLC0415  (optional dependency)
    except ImportError as err:
        raise ImportError("the XGBoost cost model needs xgboost: pip install 'tvm-ios[tune]' "
                          "(xgboost-cpu) or pip install xgboost") from err
    return xgboost


def _kernels(desc: dict) -> list[list[Kernel]]:
    groups = [[Kernel(op["flops"], op["bytes"], math.prod(op["shape"]) or 1) for op in g]
              for g in desc["groups"]]
    if desc.get("strategy") != "merge":
        return groups
    ops = [op for g in desc["groups"] for op in g]  # one merged conv, padded kernels
    kh = max(op.get("kernel", [1, 1])[0] for op in ops)
    kw = max(op.get("kernel", [1, 1])[1] for op in ops)
    outputs = sum(math.prod(op["shape"]) for op in ops)
    flops = 2.0 * outputs * ops[0].get("in_channels", 1) * kh * kw
    return [[Kernel(flops, sum(op["bytes"] for op in ops), outputs)]]


def stage_features(desc: dict, roofline: AnalyticalCostModel) -> list[float]:
    """The feature vector of one stage description (order of :data:`FEATURES`)."""
    kernels = _kernels(desc)
    flops = [sum(k.flops for k in g) for g in kernels]
    nbytes = [sum(k.bytes for k in g) for g in kernels]
    blocks = [sum(roofline.blocks(k) for k in g) for g in kernels]
    threads = [sum(k.outputs for k in g) for g in kernels]
    kinds = [op["kind"] for g in desc["groups"] for op in g]
    values = {"groups": len(desc["groups"]), "ops": len(kinds),
              "merged": float(desc.get("strategy") == "merge"), "flops": sum(flops),
              "bytes": sum(nbytes), "max_group_flops": max(flops), "max_group_bytes": max(nbytes),
              "min_group_flops": min(flops), "blocks": sum(blocks),
              "max_group_blocks": max(blocks), "threads": sum(threads),
              "max_group_threads": max(threads),
              "roofline_us": roofline.groups_latency(kernels)}
    for kind in KINDS:
        values[f"n_{kind}"] = kinds.count(kind)
    values["n_other"] = sum(k not in KINDS for k in kinds)
    return [math.log1p(values[f]) if f in _LOGGED else float(values[f]) for f in FEATURES]


class XGBCostModel:
    """Gradient-boosted trees over stage features, predicting latency in microseconds.

    Parameters
    ----------
    device : str
        Roofline preset used for the block counts and the roofline feature (``llvm``,
        ``h100``...), or the target the records are measured on (``nvidia/nvidia-h100``),
        which picks its preset. :meth:`fit` refuses records of another device.
    params : dict, optional
        XGBoost booster parameters (``rounds``: boosting rounds, default 300).
    """

    def __init__(self, device: str = "llvm", params: dict | None = None):
        self.roofline = AnalyticalCostModel(
            device if str(device).lower() in DEVICES else preset_for_target(device))
        self.params = {"max_depth": 6, "eta": 0.08, "subsample": 0.9,
                       "colsample_bytree": 0.9, "nthread": 1, "seed": 0,
                       "objective": "reg:squarederror", **(params or {})}
        self.rounds = int(self.params.pop("rounds", 300))
        self.model = None
        self.trained_on = 0

    def __repr__(self) -> str:
        return f"XGBCostModel({self.roofline.device.name!r}, trained on {self.trained_on})"

    @property
    def fitted(self) -> bool:
        """Whether the model was fitted or loaded (it cannot predict before)."""
        return self.model is not None

    def features(self, descriptions: Sequence[dict]) -> np.ndarray:
        """Feature matrix of stage descriptions."""
        return np.array([stage_features(d, self.roofline) for d in descriptions], dtype=float)

    def fit(self, records: Sequence) -> "XGBCostModel":
        """Train on log records (:class:`~.log.LogRecord`) that carry a stage description."""
        usable = [r for r in records if r.stage and r.stage.get("groups") and r.median_us > 0]
        if len(usable) < 2:
            raise ValueError(f"XGBCostModel.fit: {len(usable)} usable record(s); need >= 2")
        preset = records_preset(usable)
        if preset != self.roofline.device.name:
            raise ValueError(f"XGBCostModel.fit: records measured on {preset} targets, but "
                             f"the model's roofline features model {self.roofline.device.name}"
                             f"; use XGBCostModel({preset!r})")
        xgboost = _import_xgboost()
        data = xgboost.DMatrix(self.features([r.stage for r in usable]),
                               label=np.log([r.median_us for r in usable]))
        self.model = xgboost.train(self.params, data, num_boost_round=self.rounds)
        self.trained_on = len(usable)
        return self

    def predict(self, descriptions: Sequence[dict]) -> np.ndarray:
        """Predicted latencies (us) of stage descriptions."""
        if self.model is None:
            raise RuntimeError("XGBCostModel: fit() or load() it before predicting")
        data = _import_xgboost().DMatrix(self.features(descriptions))
        return np.exp(self.model.predict(data))

    def save(self, path: str | Path) -> None:
        """Write the model (XGBoost JSON) and its settings next to it (``.meta.json``)."""
        if self.model is None:
            raise RuntimeError("XGBCostModel: nothing to save; fit() it first")
        path = Path(path)
        self.model.save_model(str(path))
        meta = {"device": self.roofline.device.name,
                "params": {**self.params, "rounds": self.rounds},
                "trained_on": self.trained_on, "features": list(FEATURES)}
        Path(str(path) + ".meta.json").write_text(json.dumps(meta, indent=1))

    @classmethod
    def load(cls, path: str | Path) -> "XGBCostModel":
        """Read a model written by :meth:`save`."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"XGBoost cost model file {path} does not exist")
        meta_path = Path(str(path) + ".meta.json")
        meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
        if meta.get("features", list(FEATURES)) != list(FEATURES):
            raise ValueError(f"{path}: saved with other features; retrain it")
        model = cls(meta.get("device", "llvm"), meta.get("params"))
        model.model = _import_xgboost().Booster()
        model.model.load_model(str(path))
        model.trained_on = int(meta.get("trained_on", 0))
        return model

    # -- the CostModel protocol -----------------------------------------------------------
    def stage_latency(self, graph: OpGraph, groups: Sequence[Sequence[int]]) -> float:
        """Predicted latency of the groups."""
        return float(self.predict([stage_description(graph, groups, False)])[0])

    def merged_latency(self, graph: OpGraph, ops: Sequence[int]) -> float | None:
        """Predicted latency of the merged operator, or None when the ops cannot merge."""
        if merge_plan(graph, ops) is None:
            return None
        return float(self.predict([stage_description(graph, [[i] for i in ops], True)])[0])


def evaluate(predicted: Sequence[float], measured: Sequence[float]) -> dict:
    """MAPE and Spearman rank correlation of predictions against measurements."""
    from scipy.stats import spearmanr  # noqa: PLC0415

    predicted, measured = np.asarray(predicted, float), np.asarray(measured, float)
    mape = float(np.mean(np.abs(predicted - measured) / measured))
    rho = float(spearmanr(predicted, measured).statistic) if len(measured) > 1 else float("nan")
    return {"n": int(len(measured)), "mape": mape, "spearman": rho}


def records_preset(records: Sequence) -> str:
    """The one device preset of the records' targets; ``ValueError`` when they mix devices."""
    presets = {preset_for_target(t) for t in {r.target for r in records}}
    if len(presets) != 1:
        raise ValueError(f"records of {len(presets)} device presets {sorted(presets)}; fit "
                         "and evaluate one device at a time")
    return presets.pop()


def train_and_evaluate(records: Sequence, path: str | Path | None = None, held_out: float = 0.2,
                       seed: int = 0) -> dict:
    """Fit on a random ``1 - held_out`` of the records, score the rest, save a full fit.

    A random split of one model's log leaves near-duplicates of the held-out stages in
    training, so it does not measure a new model (:func:`evaluate_by_model` does).
    Returns ``{"split", "device", "train", "n", "mape", "spearman"}`` (scores on the
    held-out records); with ``path`` a model fitted on every record is saved there.
    """
    records = [r for r in records if r.stage]
    device = records_preset(records)
    random.Random(seed).shuffle(records)
    cut = max(1, int(len(records) * held_out))
    held, train = records[:cut], records[cut:]
    model = XGBCostModel(device).fit(train)
    figures = evaluate(model.predict([r.stage for r in held]), [r.median_us for r in held])
    if path is not None:
        XGBCostModel(device).fit(records).save(path)
    return {"split": f"random {held_out:.0%} of the records", "device": device,
            "train": len(train), **figures}


def evaluate_by_model(logs: dict[str, Sequence], params: dict | None = None) -> dict:
    """Leave one model out: for each model, fit on the other models' records and score the
    held-out model's stages that the training records do not hold (by signature, else key).

    ``logs`` maps a model name to its log records (one device). Returns ``{"device",
    "models": {name: {"train", "shared", "n", "mape", "spearman", "roofline"}}}``:
    ``shared`` counts held-out stages skipped because training holds them, ``roofline``
    the roofline estimate's MAPE and Spearman on the same stages, for comparison.
    """
    logs = {name: [r for r in records if r.stage and r.median_us > 0]
            for name, records in logs.items()}
    if len(logs) < 2:
        raise ValueError(f"evaluate_by_model: {len(logs)} model(s); need >= 2 to hold one out")
    device = records_preset([r for records in logs.values() for r in records])
    out = {}
    for held in logs:
        train = [r for name, records in logs.items() if name != held for r in records]
        seen = {r.signature or r.key for r in train}
        test = [r for r in logs[held] if (r.signature or r.key) not in seen]
        if not test:
            raise ValueError(f"evaluate_by_model: every stage of {held} is in the other logs")
        model = XGBCostModel(device, params).fit(train)
        measured = [r.median_us for r in test]
        roofline = [model.roofline.groups_latency(_kernels(r.stage)) for r in test]
        out[held] = {"train": len(train), "shared": len(logs[held]) - len(test),
                     **evaluate(model.predict([r.stage for r in test]), measured),
                     "roofline": evaluate(roofline, measured)}
    return {"device": device, "models": out}
