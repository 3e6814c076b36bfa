"""Tensor recipes: weights and inputs regenerated exactly on the GPU host.

A zoo model's weights run to hundreds of megabytes (NASNet-A large: ~355 MB in float32),
far over what a pack for an offline GPU host may hold. An artifact therefore records, per
tensor, a recipe (shape, dtype, seed, distribution and its two parameters) chosen to keep
the statistics of the original tensor (mean and spread, or the range of a non-negative one
such as a batch-norm variance), plus the SHA-256 of the materialised bytes. Every column of
the benchmark (TVM builds, PyTorch) uses the materialised tensors, so they share weights.

NumPy's legacy ``RandomState`` is used because its streams are frozen across NumPy versions.
Imports only numpy and the standard library (the runtime-only runner uses it).
"""
from __future__ import annotations

import hashlib

import numpy as np

__all__ = ["recipe_of", "input_recipe", "materialize", "check_materialized", "RecipeError"]


class RecipeError(ValueError):
    """A recipe that does not materialise to the recorded bytes."""


def _digest(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def _finish(recipe: dict) -> dict:
    recipe["sha256"] = _digest(materialize(recipe, check=False))
    return recipe


def recipe_of(name: str, array: np.ndarray, seed: int) -> dict:
    """A recipe reproducing the statistics of ``array`` from ``seed``.

    Non-negative floating tensors become ``uniform(min, max)``; other floating tensors
    ``normal(mean, std)``; integer tensors keep their range. Constant tensors stay constant.
    """
    array = np.asarray(array)
    recipe = {"name": name, "shape": list(array.shape), "dtype": str(array.dtype),
              "seed": int(seed)}
    low = float(array.min()) if array.size else 0.0
    high = float(array.max()) if array.size else 0.0
    if low == high:
        recipe.update(dist="constant", a=low, b=low)
    elif np.issubdtype(array.dtype, np.integer):
        recipe.update(dist="integers", a=low, b=high)
    elif low >= 0.0:
        recipe.update(dist="uniform", a=low, b=high)
    else:
        recipe.update(dist="normal", a=float(array.mean()), b=float(array.std()))
    return _finish(recipe)


def input_recipe(name: str, shape, dtype: str, seed: int) -> dict:
    """A standard-normal input tensor (uniform integers in [0, 10) for integer dtypes)."""
    dist = "integers" if np.issubdtype(np.dtype(dtype), np.integer) else "normal"
    recipe = {"name": name, "shape": [int(d) for d in shape], "dtype": str(dtype),
              "seed": int(seed), "dist": dist, "a": 0.0, "b": 9.0 if dist == "integers" else 1.0}
    return _finish(recipe)


def materialize(recipe: dict, check: bool = True, seed: int | None = None) -> np.ndarray:
    """The tensor a recipe describes.

    Parameters
    ----------
    recipe : dict
        A recipe from :func:`recipe_of` or :func:`input_recipe`.
    check : bool
        Compare with the recorded SHA-256 and raise :class:`RecipeError` on a difference.
    seed : int, optional
        Another seed (same distribution): rotating inputs for timing. Never checked.
    """
    shape, dtype = tuple(recipe["shape"]), np.dtype(recipe["dtype"])
    rng = np.random.RandomState(recipe["seed"] if seed is None else seed)
    dist, a, b = recipe["dist"], recipe["a"], recipe["b"]
    if dist == "constant":
        array = np.full(shape, a)
    elif dist == "integers":
        array = rng.randint(int(a), int(b) + 1, size=shape)
    elif dist == "uniform":
        array = rng.uniform(a, b, size=shape)
    elif dist == "normal":
        array = rng.standard_normal(shape) * b + a
    else:
        raise RecipeError(f"tensor {recipe['name']!r}: unknown distribution {dist!r}")
    array = array.astype(dtype)
    if check and seed is None:
        check_materialized(recipe, array)
    return array


def check_materialized(recipe: dict, array: np.ndarray) -> None:
    """Raise :class:`RecipeError` unless ``array`` has the recipe's recorded SHA-256."""
    if "sha256" in recipe and _digest(array) != recipe["sha256"]:
        raise RecipeError(f"tensor {recipe['name']!r} regenerated here differs from the one "
                          "the artifact was built with (NumPy's RandomState stream changed?)")
