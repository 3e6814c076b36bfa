"""Every tutorial notebook runs top to bottom in a Jupyter kernel and shows what it promises.

:data:`TUTORIALS` maps each notebook under ``tutorials/`` to its checks: the figures it
prints (a regular expression with one group, read as a number), conditions on them (Python
expressions over the figures' names), and how many plots (``image/png`` outputs) it must
show. A notebook is executed with nbclient in a fresh ``python3`` kernel, in a temporary
directory; a cell that raises fails the test, and so does a missing figure, a condition
that does not hold or a missing plot. A notebook without an entry fails too: adding a
tutorial is adding one entry here.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import nbclient
import nbformat
import pytest

TUTORIALS_DIR = Path(__file__).parent.parent / "tutorials"
NUMBER = r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"


@dataclass(frozen=True)
class Tutorial:
    """What one notebook must show.

    Parameters
    ----------
    figures : dict of str to str
        Name -> regular expression whose one group is a number printed by the notebook
        (``{N}`` in it stands for a number). The last match in the outputs counts.
    holds : tuple of str
        Conditions on the figures, e.g. ``"diff < 1e-4"`` or ``"ios < sequential"``.
    plots : int
        Least number of ``image/png`` outputs.
    slow : bool
        Marked ``slow`` (deselected in the fast tier).
    timeout : int
        Seconds one cell may take.
    """

    figures: dict = field(default_factory=dict)
    holds: tuple = ()
    plots: int = 1
    slow: bool = False
    timeout: int = 900


TUTORIALS = {
    "01_ios_schedule.ipynb": Tutorial(
        figures={"diff": r"max \|diff\| = {N}",
                 "ios": r"\bios: +{N} us estimated",
                 "sequential": r"sequential: +{N} us estimated",
                 "greedy": r"greedy: +{N} us estimated",
                 "units": r"^{N} schedulable units"},
        holds=("diff < 1e-4", "ios < sequential", "ios <= greedy", "units > 100")),
    "02_tuning.ipynb": Tutorial(
        figures={"pair": r"ops 0 and 1 as one rProgram: {N} us vs",
                 "in_turn": r"as one rProgram: \S+ us vs {N} us in turn",
                 "records": r"^{N} records in",
                 "rpc_pair": r"over RPC \(.*\): ops 0 and 1 as one rProgram {N} us",
                 "new": r"^{N} new measurements;",
                 "tuned": r"tuned kernels: {N} of",
                 "untuned_ms": r"untuned {N} ms",
                 "tuned_ms": r", tuned {N} ms",
                 "diff": r"max \|diff\| {N}"},
        holds=("pair > 0", "in_turn > 0", "records >= 3", "rpc_pair > 0", "new >= 0",
               "tuned >= 1", "untuned_ms > 0", "tuned_ms > 0", "diff < 1e-3")),
    "03_rprogram_engine.ipynb": Tutorial(
        figures={"makespan": r"makespan {N} us \(estimated\)",
                 "cpu_programs": r"^{N} rPrograms on",
                 "sim_diff": r"max \|diff\| vs llvm {N}"},
        holds=("makespan > 0", "cpu_programs > 0", "sim_diff < 1e-4")),
    "04_graphturbo.ipynb": Tutorial(
        figures={"diff": r"max \|diff\| = {N}",
                 "original_ms": r"latency: original {N} ms"},
        holds=("diff < 1e-3", "original_ms > 0"), plots=2),
    "05_pipelines.ipynb": Tutorial(
        figures={"measured": r"Shisha measured {N} configurations",
                 "frames": r"^{N} frames at",
                 "fps": r"frames at {N} frames/s"},
        holds=("measured > 0", "frames > 0", "fps > 0")),
    "06_onnx_pipeline.ipynb": Tutorial(
        figures={"folded": r"folded {N} constant nodes",
                 "stages_diff": r"ios-stages +\| max \|diff\| \S+ \| relative {N}",
                 "rprogram_diff": r"ios-rprogram +\| max \|diff\| \S+ \| relative {N}",
                 "rprograms": r"{N} rPrograms built",
                 "library_rprograms": r"the library carries .* {N} rPrograms",
                 "ios_us": r"IOS schedule: +{N} us",
                 "sequential_us": r"sequential: +{N} us"},
        holds=("folded > 0", "stages_diff < 1e-4", "rprogram_diff < 1e-4", "rprograms > 0",
               "library_rprograms == rprograms", "ios_us < sequential_us"),
        plots=2),
}


def _pattern(regex: str) -> re.Pattern:
    """The figure's expression, ``{N}`` standing for the number it reads."""
    return re.compile(regex.replace("{N}", NUMBER), re.MULTILINE)


def outputs_of(notebook) -> tuple[str, int]:
    """All text a notebook printed or displayed, and its number of ``image/png`` outputs."""
    texts, images = [], 0
    for cell in notebook.cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                texts.append(out.get("text", ""))
            data = out.get("data", {})
            texts.append(data.get("text/plain", ""))
            images += "image/png" in data
    return "\n".join(texts), images


def check(tutorial: Tutorial, text: str, images: int) -> dict:
    """Assert that outputs ``text`` with ``images`` plots show what ``tutorial`` promises;
    returns the figures read."""
    figures = {}
    for name, regex in tutorial.figures.items():
        found = _pattern(regex).findall(text)
        assert found, f"the notebook printed no {name!r} (looked for {regex!r})"
        figures[name] = float(found[-1])
    for condition in tutorial.holds:
        assert eval(condition, {}, dict(figures)), \
            f"{condition} does not hold for {figures}"
    assert images >= tutorial.plots, f"{images} plots shown, {tutorial.plots} promised"
    return figures


def _params():
    names = sorted(p.name for p in TUTORIALS_DIR.glob("*.ipynb"))
    return [pytest.param(n, marks=[pytest.mark.slow] if TUTORIALS.get(n, Tutorial()).slow
                         else [], id=n) for n in names]


@pytest.mark.parametrize("name", _params())
def test_notebook_shows_what_it_promises(name, tmp_path):
    assert name in TUTORIALS, f"{name} has no entry in TUTORIALS: say what it must show"
    tutorial = TUTORIALS[name]
    notebook = nbformat.read(TUTORIALS_DIR / name, as_version=4)
    client = nbclient.NotebookClient(notebook, timeout=tutorial.timeout,
                                     kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    check(tutorial, *outputs_of(notebook))


@pytest.mark.parametrize("name", sorted(TUTORIALS))
def test_every_entry_needs_its_figures(name):
    with pytest.raises(AssertionError, match="printed no"):
        check(TUTORIALS[name], "", TUTORIALS[name].plots)


def test_checks_fail_when_a_figure_is_off_or_a_plot_missing():
    tutorial = Tutorial(figures={"diff": r"max \|diff\| = {N}"}, holds=("diff < 1e-4",),
                        plots=1)
    assert check(tutorial, "max |diff| = 3e-06", 1) == {"diff": 3e-06}
    with pytest.raises(AssertionError, match="diff < 1e-4 does not hold"):
        check(tutorial, "max |diff| = 0.5", 1)
    with pytest.raises(AssertionError, match="0 plots shown, 1 promised"):
        check(tutorial, "max |diff| = 0", 0)
