"""Model zoo: framework-neutral CNN definitions and their Relax modules.

Each model is one module with ``build(batch_size=1, image_size=None, num_classes=...) -> Net``
and the constants ``DEFAULT_IMAGE_SIZE``, ``MIN_IMAGE_SIZE``, ``NUM_CLASSES`` and
``PUBLISHED_PARAMS``. The functions here look them up by name::

    from tvm_ios import models
    mod, params = models.get("inception_v3", image_size=75)   # Relax module + numpy params
    net = models.net("nasnet_a")                               # the plain-data definition

PyTorch models: ``from_torch(module, example_inputs)`` (and ``from_exported_file("m.pt2")``)
return the same ``(mod, params)``; :mod:`.torchvision_zoo` builds torchvision's architectures.

Models: ``inception_v3``, ``squeezenet`` (1.1), ``nasnet_a`` (large, 6@4032), ``randwire``
(WS(4, 0.75), C = 154), ``resnext29`` (16x64d, CIFAR), ``resnet50`` and ``mobilenet_v2``.
"""
from __future__ import annotations

import importlib
import logging
from types import ModuleType

import numpy as np

from .netdef import Net, Node
from .onnx_import import from_onnx
from .relax_emit import to_relax
from .weights import init_params

logger = logging.getLogger(__name__)

__all__ = ["get", "net", "names", "min_image_size", "default_image_size", "published_params",
           "from_onnx", "from_torch", "from_exported_file", "to_relax", "init_params", "Net",
           "Node"]


def from_torch(module, example_inputs, fold: bool = True):
    """Relax module and parameters of a ``torch.nn.Module`` (``torch.export``, TVM's
    ``from_exported_program``, batch norms folded); see
    :func:`tvm_ios.models.torch_import.from_torch`."""
    from .torch_import import from_torch as _from_torch

    return _from_torch(module, example_inputs, fold=fold)


def from_exported_file(path, fold: bool = True):
    """Relax module and parameters of a ``torch.export.save``-d program (``.pt2``); see
    :func:`tvm_ios.models.torch_import.load_exported`."""
    from .torch_import import load_exported

    return load_exported(path, fold=fold)

_MODULES = {
    "inception_v3": "inception_v3",
    "mobilenet_v2": "mobilenet_v2",
    "nasnet_a": "nasnet_a",
    "randwire": "randwire",
    "resnet50": "resnet50",
    "resnext29": "resnext29",
    "squeezenet": "squeezenet",
    "synthnet": "synthnet",
    "yolov3": "yolov3",
}


def names() -> list[str]:
    """Sorted names of the models of the zoo."""
    return sorted(_MODULES)


def _module(name: str) -> ModuleType:
    if name not in _MODULES:
        raise ValueError(f"unknown model {name!r}; known models: {', '.join(names())}")
    return importlib.import_module(f"{__name__}.{_MODULES[name]}")


def min_image_size(name: str) -> int:
    """Smallest square input size for which every feature map of model ``name`` is non-empty."""
    return _module(name).MIN_IMAGE_SIZE


def default_image_size(name: str) -> int:
    """The published input size of model ``name`` (e.g. 299 for ``inception_v3``)."""
    return _module(name).DEFAULT_IMAGE_SIZE


def published_params(name: str) -> int:
    """Parameter count reported for model ``name`` by its paper or reference implementation."""
    return _module(name).PUBLISHED_PARAMS


def net(name: str, image_size: int | None = None, batch_size: int = 1, **kwargs) -> Net:
    """The definition of model ``name``.

    Parameters
    ----------
    name : str
        One of :func:`names`.
    image_size : int, optional
        Square input size; default the published one.
    batch_size : int
        Batch size of the input.
    **kwargs
        Passed to the model's ``build`` (e.g. ``num_classes``).

    Returns
    -------
    Net

    Raises
    ------
    ValueError
        For an unknown name, or an image size below :func:`min_image_size`.
    """
    module = _module(name)
    if image_size is not None and image_size < module.MIN_IMAGE_SIZE:
        raise ValueError(f"{name}: image_size {image_size} is below the minimum "
                         f"{module.MIN_IMAGE_SIZE}")
    return module.build(batch_size=batch_size, image_size=image_size, **kwargs)


def get(name: str, batch_size: int = 1, image_size: int | None = None, seed: int = 0,
        calibrate: bool = True, **kwargs) -> tuple["object", dict[str, np.ndarray]]:
    """Relax module and parameters of model ``name``.

    Parameters
    ----------
    name : str
        One of :func:`names`.
    batch_size : int
        Batch size of ``data``.
    image_size : int, optional
        Square input size; default the published one.
    seed : int
        Seed of the deterministic random weights.
    calibrate : bool
        Calibrate the weights so activations stay O(1) (:mod:`~tvm_ios.models.weights`; a
        NumPy forward pass: ~1 s at test sizes, tens of seconds for NASNet-A at 331x331).
        False gives plain He-normal weights instantly, enough when only timings matter.
    **kwargs
        Passed to the model's ``build``.

    Returns
    -------
    mod : tvm.IRModule
        ``main(data, <params...>)`` with ``num_input = 1`` (see :func:`to_relax`).
    params : dict of str to numpy.ndarray
        Parameters by name, in the order of ``main``'s parameters after ``data``.
    """
    return to_relax(net(name, image_size=image_size, batch_size=batch_size, **kwargs),
                    seed=seed, calibrate=calibrate)
