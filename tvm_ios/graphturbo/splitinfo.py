"""SplitInfo (Algorithm 1), the best split (Equation 1) and the recompute-cost check.

A sub-graph (SG) is a bitset of layers. :class:`SGContext` computes, and caches per SG, the
region of every tensor an instance needs (:meth:`SGContext.regions`), the SG's peak memory
footprint with buffers freed after their last use, and its SplitInfo: for each output
dimension every layer can be cut along, the smallest factor ``v`` in 1, 2, 4, 8, 9, 10, ...
(dividing the dimension; 3, 5, 6, 7 last) with ``ceil(peak / v)`` within the local capacity
and every instance, halos included, fitting too. A spatial split
of an SG with several windowed layers recomputes halo rows; it is refused when that extra
compute costs more time than the DRAM traffic the fusion saves.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from ..graph.bitset import ids_of
from .hwspec import HardwareSpec
from .layers import LayerGraph
from .tensor_regions import box_bytes, box_volume, full_box, hull, input_box, producible, supports

__all__ = ["SplitEntry", "SGContext", "best_split", "partition"]


@dataclass(frozen=True)
class SplitEntry:
    """One SplitInfo tuple: split ``dim`` by ``factor``; ``n_ops`` layers are split."""

    dim: int
    factor: int
    n_ops: int

    def to_dict(self) -> dict:
        """JSON-serialisable dict."""
        return asdict(self)


def best_split(entries: list[SplitEntry]) -> SplitEntry | None:
    """Equation (1): lexmax of (n_d, -f_d, -d); None when SplitInfo is empty."""
    if not entries:
        return None
    return max(entries, key=lambda e: (e.n_ops, -e.factor, -e.dim))


def partition(shape: tuple, dim: int, factor: int) -> list[tuple]:
    """The ``factor`` equal boxes of a tensor cut along ``dim``."""
    step = shape[dim] // factor
    box = list(full_box(shape))
    out = []
    for k in range(factor):
        box[dim] = (k * step, (k + 1) * step)
        out.append(tuple(box))
    return out


def _candidates(size: int):
    """The paper's 1, 2, 4, 8, 9, 10, ... then 3, 5, 6, 7 (so that 7x7 maps can split)."""
    for v in [1, 2, 4, 8] + list(range(9, size + 1)) + [3, 5, 6, 7]:
        if v <= size and size % v == 0:
            yield v


class SGContext:
    """Per-SG facts for one layer graph and one hardware spec (cached by bitset)."""

    def __init__(self, lg: LayerGraph, hw: HardwareSpec, itemsize: int = 4):
        self.lg, self.hw, self.itemsize = lg, hw, itemsize
        self._info: dict[int, list[SplitEntry]] = {}
        self._peak: dict[int, int] = {}
        self.refusals: list[dict] = []

    # -- structure ----------------------------------------------------------------------
    def output_layers(self, mask: int) -> list[int]:
        """Layers of the SG whose output is used outside it (or returned)."""
        g = self.lg.graph
        return [i for i in ids_of(mask) if g.succ[i] & ~mask or i in self.lg.outputs]

    def output_layer(self, mask: int) -> int:
        """The SG's single output layer (its last one if it has none used outside)."""
        outs = self.output_layers(mask)
        if len(outs) > 1:
            raise ValueError(f"sub-graph {self.lg.graph.names_of(mask)} has several outputs")
        return outs[0] if outs else ids_of(mask)[-1]

    def bindings(self, mask: int) -> list[int]:
        """Binding indices of the SG, ascending."""
        return sorted(i for k in ids_of(mask) for i in self.lg.bindings[k])

    # -- regions ------------------------------------------------------------------------
    def regions(self, mask: int, out_box: tuple) -> tuple[dict, dict]:
        """Boxes computed per binding, and boxes needed per external source key."""
        inside = set(self.bindings(mask))
        last = self.lg.bindings[self.output_layer(mask)][-1]
        need: dict = {last: out_box}
        ext: dict = {}
        for b in sorted(inside, reverse=True):
            if b not in need:
                continue
            info = self.lg.infos[b]
            need[b] = producible(info, need[b])
            for _, src, shape in info.args:
                box = input_box(info, shape, need[b])
                if src.startswith("%") and int(src[1:]) in inside:
                    need[int(src[1:])] = hull(need.get(int(src[1:])), box)
                else:
                    ext[src] = hull(ext.get(src), box)
        return need, ext

    def peak(self, mask: int, out_box: tuple | None = None) -> int:
        """Peak bytes of activations an (instance of the) SG holds at once."""
        if out_box is None and mask in self._peak:
            return self._peak[mask]
        g = self.lg.graph
        box = out_box or full_box(g.nodes[self.output_layer(mask)].shape)
        need, ext = self.regions(mask, box)
        layers = ids_of(mask)
        last_use = {k: max([j for j in layers if g.pred[j] >> k & 1], default=layers[-1])
                    for k in layers}
        out_bytes = {k: box_bytes(need.get(self.lg.bindings[k][-1], ()), self.itemsize)
                     for k in layers}
        base = sum(box_bytes(b, self.itemsize) for b in ext.values())
        top = max(sum(out_bytes[k] for k in layers if k <= t and last_use[k] >= t)
                  for t in layers)
        if out_box is None:
            self._peak[mask] = base + top
        return base + top

    # -- Algorithm 1 --------------------------------------------------------------------
    def split_info(self, mask: int) -> list[SplitEntry]:
        """SplitInfo of an SG (Algorithm 1 with the recompute check)."""
        if mask in self._info:
            return self._info[mask]
        g = self.lg.graph
        shape = g.nodes[self.output_layer(mask)].shape
        peak, cap = self.peak(mask), self.hw.local_capacity
        infos = [self.lg.infos[b] for b in self.bindings(mask)]
        entries = []
        for dim in range(len(shape)):
            if not all(supports(info, dim) for info in infos):
                continue
            factor = next((v for v in _candidates(shape[dim]) if math.ceil(peak / v) <= cap
                           and self._fits(mask, shape, dim, v)), None)
            if factor is None:
                continue
            if factor > 1 and dim >= 2 and not self._recompute_pays(mask, dim, factor):
                continue
            entries.append(SplitEntry(dim, factor, len(ids_of(mask))))
        if not entries and peak <= cap:
            entries.append(SplitEntry(0, 1, len(ids_of(mask))))  # not splittable, fits
        self._info[mask] = entries
        return entries

    def _fits(self, mask: int, shape: tuple, dim: int, factor: int) -> bool:
        """Every instance, halos included, fits the local capacity."""
        return all(self.peak(mask, box) <= self.hw.local_capacity
                   for box in partition(shape, dim, factor))

    def _recompute_pays(self, mask: int, dim: int, factor: int) -> bool:
        """The recompute check: halo recomputation must cost less than it saves."""
        layers = ids_of(mask)
        windows = sum(1 for k in layers for b in self.lg.bindings[k]
                      if self.lg.infos[b].rule == "window")
        if windows < 2:
            return True
        g = self.lg.graph
        out = self.output_layer(mask)
        extra = -sum(g.nodes[k].flops for k in layers)
        for box in partition(g.nodes[out].shape, dim, factor):
            need, _ = self.regions(mask, box)
            for k in layers:
                b = self.lg.bindings[k][-1]
                if b in need:
                    extra += g.nodes[k].flops * box_volume(need[b]) / max(
                        1, box_volume(full_box(g.nodes[k].shape)))
        saved = 2 * sum(g.nodes[k].bytes for k in layers if k != out)
        cost_s = extra / (self.hw.peak_gflops * 1e9)
        saved_s = saved / (self.hw.dram_gbs * 1e9)
        if cost_s > saved_s:
            self.refusals.append({"layers": g.names_of(mask), "dim": dim, "factor": factor,
                                  "recompute_flops": int(extra), "saved_bytes": int(saved)})
            return False
        return True
