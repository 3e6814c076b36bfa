"""torchvision's model definitions, with seeded random weights, as Relax modules.

``--model torchvision:NAME`` and the torchvision test tier build ``torchvision.models.NAME``
with random weights (no download), randomize its batch-norm statistics (so folding them is
visible in the output), export it at a reduced input size and import it with
:func:`~tvm_ios.models.torch_import.from_torch`.

Why not ``import torchvision``: on a machine where torch is the CPU build (``torch==2.13.0``
from its ``+cpu`` wheel), PyPI's ``torchvision==0.28.0`` wheel is linked against the CUDA build
(``libc10_cuda.so``), so its compiled extension ``torchvision/_C.so`` does not load, and
``torchvision/__init__.py`` then fails in ``_meta_registrations``, which registers fake
kernels for ``torchvision::nms`` and the other compiled ops ("operator torchvision::nms does
not exist"). The model definitions need none of those ops (``torchvision.ops`` calls them
only inside detection heads). So when the plain import fails, :func:`torchvision_models`
puts a bare package object for ``torchvision`` in ``sys.modules`` whose ``__path__`` is the
installed package's directory, without running its ``__init__``: ``torchvision.models`` and
its submodules then import from the installed files as usual, and the compiled ops stay
unregistered. Where torchvision imports normally, it is used as it is.
"""
from __future__ import annotations

import importlib
import importlib.util
import logging
import sys
import types

logger = logging.getLogger(__name__)

__all__ = ["torchvision_models", "build", "get", "ARCHS", "INSTALL"]

INSTALL = "pip install --no-deps torchvision==0.28.0"

#: Architectures known to import and compile, with constructor options and a test input size.
ARCHS = {
    "googlenet": ({"aux_logits": False, "init_weights": True}, 64),
    "inception_v3": ({"aux_logits": False, "init_weights": True}, 75),
    "squeezenet1_1": ({}, 64),
    "densenet121": ({}, 64),
    "shufflenet_v2_x1_0": ({}, 64),
    "mobilenet_v2": ({}, 64),
    "mnasnet1_0": ({}, 64),
    "efficientnet_b0": ({}, 64),
    "regnet_y_400mf": ({}, 64),
    "resnext50_32x4d": ({}, 64),
}


def torchvision_models():
    """The ``torchvision.models`` package (see the module docstring for how it is imported).

    Raises
    ------
    ModuleNotFoundError
        When torch or torchvision is not installed (``name`` says which).
    """
    importlib.import_module("torch")
    if "torchvision.models" in sys.modules:
        return sys.modules["torchvision.models"]
    spec = importlib.util.find_spec("torchvision")
    if spec is None:
        raise ModuleNotFoundError(f"torchvision is not installed: {INSTALL}", name="torchvision")
    try:
        return importlib.import_module("torchvision.models")
    except RuntimeError as err:  # its compiled ops do not load against this torch
        logger.info("import torchvision failed (%s); using its model definitions alone", err)
    for name in [n for n in sys.modules if n == "torchvision" or n.startswith("torchvision.")]:
        del sys.modules[name]
    package = types.ModuleType("torchvision")
    package.__path__ = list(spec.submodule_search_locations)
    package.__spec__, package.__file__ = spec, spec.origin
    sys.modules["torchvision"] = package
    return importlib.import_module("torchvision.models")


def build(name: str, seed: int = 0):
    """``torchvision.models.<name>`` in eval mode, random weights and batch-norm statistics
    drawn with ``seed``."""
    import torch

    zoo = torchvision_models()
    if not hasattr(zoo, name) or name.startswith("_"):
        raise ValueError(f"torchvision has no model {name!r}; e.g. {', '.join(ARCHS)}")
    kwargs = ARCHS.get(name, ({}, None))[0]
    torch.manual_seed(seed)
    module = getattr(zoo, name)(weights=None, **kwargs).eval()
    randomize_batch_norms(module, seed)
    return module


def randomize_batch_norms(module, seed: int = 0) -> None:
    """Give every batch norm of ``module`` random affine parameters and running statistics
    (fresh ones are the identity, under which a wrong fold would go unseen)."""
    import torch

    gen = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for sub in module.modules():
            if isinstance(sub, torch.nn.modules.batchnorm._BatchNorm) and sub.track_running_stats:
                n = sub.num_features
                sub.running_mean.copy_(0.1 * torch.randn(n, generator=gen))
                sub.running_var.copy_(0.5 + torch.rand(n, generator=gen))
                if sub.affine:
                    sub.weight.copy_(0.5 + torch.rand(n, generator=gen))
                    sub.bias.copy_(0.1 * torch.randn(n, generator=gen))


def get(name: str, batch_size: int = 1, image_size: int | None = None, seed: int = 0):
    """``(mod, params)`` of ``torchvision.models.<name>`` (see :func:`build`) at
    ``image_size`` (default the size of :data:`ARCHS`, else 224)."""
    import torch

    from .torch_import import from_torch

    size = image_size or ARCHS.get(name, ({}, 224))[1]
    module = build(name, seed)
    example = torch.randn(batch_size, 3, size, size, generator=torch.Generator().manual_seed(seed))
    return from_torch(module, (example,))
