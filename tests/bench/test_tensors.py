"""Tensor recipes: statistics kept, exact regeneration, corruption detected."""
import numpy as np
import pytest

from tvm_ios.bench.tensors import RecipeError, input_recipe, materialize, recipe_of


def test_normal_recipe_keeps_mean_and_std():
    array = (0.3 + 0.5 * np.random.default_rng(0).standard_normal((64, 64))).astype("float32")
    recipe = recipe_of("w", array, seed=5)
    assert recipe["dist"] == "normal"
    again = materialize(recipe)
    assert again.dtype == np.float32 and again.shape == (64, 64)
    assert abs(again.mean() - 0.3) < 0.05 and abs(again.std() - 0.5) < 0.05
    np.testing.assert_array_equal(again, materialize(recipe))


def test_non_negative_and_constant_and_integer_tensors():
    variance = np.array([0.5, 1.0, 2.0], "float32")
    recipe = recipe_of("var", variance, seed=1)
    assert recipe["dist"] == "uniform"
    assert materialize(recipe).min() >= 0.5 and materialize(recipe).max() <= 2.0
    assert materialize(recipe_of("c", np.ones(4, "float32"), 2)).tolist() == [1, 1, 1, 1]
    ints = materialize(recipe_of("i", np.array([3, 7], "int64"), 3))
    assert ints.dtype == np.int64 and 3 <= ints.min() and ints.max() <= 7


def test_input_recipe_and_rotation_seeds():
    recipe = input_recipe("x", (2, 3), "float32", seed=0)
    base = materialize(recipe)
    other = materialize(recipe, seed=1000)
    assert base.shape == other.shape == (2, 3) and not np.array_equal(base, other)


def test_changed_recipe_is_detected():
    recipe = recipe_of("w", np.arange(-3, 3, dtype="float32"), seed=4)
    recipe["seed"] = 5
    with pytest.raises(RecipeError, match="'w' regenerated here differs"):
        materialize(recipe)
