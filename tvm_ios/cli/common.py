"""Helpers shared by the subcommands: model loading, options, JSON output, progress."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from .kernels_option import kernels_of

__all__ = ["add_model_options", "add_ios_options", "load_model", "load_ios_graph",
           "write_json", "Progress", "make_cost_model", "block_options"]


def add_model_options(parser) -> None:
    """``--model NAME|FILE.onnx``, ``--batch``, ``--image-size``, ``--json``."""
    parser.add_argument("--model", required=True,
                        help="a zoo model name (see `tvm-ios schedule --list`), an ONNX file, "
                             "a saved torch.export program (FILE.pt2) or torchvision:NAME "
                             "(random weights; e.g. torchvision:googlenet)")
    parser.add_argument("--batch", type=int, default=1, help="batch size (default 1)")
    parser.add_argument("--image-size", type=int, default=None,
                        help="square input size (default: the model's published size)")
    parser.add_argument("--json", metavar="FILE", help="write the figures to FILE as JSON")


def add_ios_options(parser) -> None:
    """IOS search options: r, s, strategy, device of the analytical cost model."""
    parser.add_argument("-r", "--max-group-size", type=int, default=3,
                        help="r: most ops per group (default 3)")
    parser.add_argument("-s", "--max-num-groups", type=int, default=8,
                        help="s: most groups per stage (default 8)")
    parser.add_argument("--strategy", choices=("both", "parallel", "merge"), default="both")
    parser.add_argument("--max-block-bound", type=float, default=None,
                        help="cut segments whose transition bound C(n/d+2,2)^d exceeds this "
                             "(default 3e10; such cuts are reported and can lose)")
    parser.add_argument("--device", default=None,
                        help="device preset of the analytical cost model (v100, a100, h100, "
                             "cpu; default v100, or cpu where the verb builds for llvm)")


def make_cost_model(args, target=None):
    """The cost model the options ask for (the ``cpu`` preset for an llvm ``target`` unless
    ``--device`` names one)."""
    from ..cost.analytical import AnalyticalCostModel

    device = getattr(args, "device", None)
    if device is None:
        device = "cpu" if target is not None and "llvm" in str(target) else "v100"
    return AnalyticalCostModel(device)


def block_options(args) -> dict:
    """Block-partition keyword arguments from the options that were given."""
    bound = getattr(args, "max_block_bound", None)
    return {} if bound is None else {"max_block_bound": bound}


#: ``--model torchvision:NAME``: a torchvision architecture with random weights.
TORCHVISION = "torchvision:"


def load_model(args):
    """``(mod, params, name)`` of ``--model``: a zoo name, ``torchvision:NAME``, or a path to
    an ONNX file or a saved torch.export program (``.pt2``)."""
    from .. import models  # (keeps `tvm-ios --help` fast)

    spec = args.model
    if spec.startswith(TORCHVISION):
        from ..models import torchvision_zoo  # (needs torch)

        arch = spec[len(TORCHVISION):]
        mod, params = torchvision_zoo.get(arch, batch_size=args.batch, image_size=args.image_size)
        return mod, params, f"torchvision_{arch}"
    if spec.endswith(".pt2"):
        if not Path(spec).is_file():
            raise FileNotFoundError(f"model file {spec} does not exist")
        mod, params = models.from_exported_file(spec)
        return mod, params, Path(spec).stem
    if spec.endswith(".onnx") or "/" in spec or Path(spec).suffix:
        path = Path(spec)
        if not path.is_file():
            raise FileNotFoundError(f"model file {path} does not exist")
        mod, params = models.from_onnx(str(path))
        return mod, params, path.stem
    mod, params = models.get(spec, batch_size=args.batch, image_size=args.image_size)
    return mod, params, spec


def load_ios_graph(args):
    """``(mod, name)``: ``--model`` with its weights bound and the convolution taps that read
    only padding cut as the ``ios`` pipeline cuts them with ``--kernels``, in the layout its
    kernels were tuned in (:func:`~tvm_ios.bench.cpu_builds.ios_graph`): the graph it
    schedules, so that ``tune`` measures and ``schedule`` prices its stages."""
    from .. import _tvm
    from ..bench.cpu_builds import ios_graph

    mod, params, name = load_model(args)
    llvm = "llvm" in str(getattr(args, "target", "llvm"))
    kernels = kernels_of(args, name, mod) if llvm else None  # (keyed by the unbound module)
    mod = _tvm.bind_params(mod, params)
    return ios_graph(mod, kernels), name  # (trimmed, in the database's layout)


def write_json(path: str | None, data, provenance: bool = False) -> None:
    """Write ``data`` to ``path`` as JSON (no-op when path is None). With ``provenance`` a
    dict of figures gets a ``provenance`` entry: command, commit, CPU, versions, date
    (:func:`tvm_ios.bench.provenance.provenance`)."""
    if path:
        if provenance and isinstance(data, dict):
            from ..bench.provenance import provenance as taken_now

            data = {**data, "provenance": taken_now()}
        Path(path).write_text(json.dumps(data, indent=1))


class Progress:
    """A one-line progress bar on stderr: ``progress(done, total, extra)``."""

    def __init__(self, label: str, unit: str = "states", stream=None):
        self.label, self.unit = label, unit
        self.stream = stream or sys.stderr
        self.start = time.perf_counter()
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()

    def __call__(self, done: int, total: int, extra: int) -> None:
        width = 30
        filled = int(width * done / max(total, 1))
        line = (f"{self.label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total} "
                f"blocks, {extra} {self.unit}, {time.perf_counter() - self.start:.1f}s")
        if self.tty:
            self.stream.write("\r" + line + ("\n" if done == total else ""))
        elif done == total or done % max(1, total // 10) == 0:
            self.stream.write(line + "\n")
        self.stream.flush()
