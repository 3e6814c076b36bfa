"""GPU benchmarks: build here, run there.

``artifact`` cross-compiles a model into a directory (library, parameter recipe, reference
output, manifest) on a machine with no GPU; ``run`` loads it with TVM's runtime only, checks
the output against the reference and times it; ``pack`` bundles the runtime subset and
artifacts for a GPU host with no network; ``torch_baselines`` times PyTorch on the same
model and weights; ``table`` writes the comparison to ``docs/benchmarks.md``.

Nothing is imported here: ``run`` (and what it imports: ``manifest``, ``tensors``) must
load on a host where only TVM's runtime exists.
"""

__all__ = ["artifact", "manifest", "pack", "run", "table", "tensors", "torch_baselines"]
