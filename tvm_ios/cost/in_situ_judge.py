"""Each concurrent stage priced inside the model: what its rProgram gains where it runs.

The stage judges time a stage alone, caches flushed; the whole-model judge times whole
builds. Neither says which stage gains in the model: on Inception V3 (75 px, 2 threads,
this project's Emerald Rapids VM) 13 stages judged 1.43 ms faster alone were 0.03 ms faster
in the model, some faster, some slower. Here two builds of the model are traced call by
call as they run (:class:`~tvm_ios.runtime.instrument.TracedRun`): one with every ranked
stage an rProgram, one with every stage's ops in turn. Outside the stages their calls are
the same kernels in the same order, so aligning the two call sequences
(:class:`difflib.SequenceMatcher` over kernel names) leaves blocks where they differ: an
rProgram call (or a few) against the in-turn kernels of its ops, the neighbours fused
otherwise included. A block whose in-turn calls took longer (medians per call over the
traced runs) keeps its stages concurrent; :func:`in_situ_keep` names them, and the
whole-model judge times that schedule beside its other candidates.
"""
from __future__ import annotations

import difflib
import logging
import statistics

__all__ = ["call_medians", "stage_blocks", "in_situ_keep"]

logger = logging.getLogger(__name__)


def call_medians(traces: list[list[tuple[str, float]]]) -> tuple[list[str], list[float]]:
    """Names and median seconds per call position of several traces of one build.

    Raises
    ------
    ValueError
        When the traces do not call the same kernels in the same order.
    """
    names = [n for n, _ in traces[0]]
    for trace in traces[1:]:
        if [n for n, _ in trace] != names:
            raise ValueError("the traced runs of one build called different kernels")
    return names, [statistics.median(t[i][1] for t in traces) for i in range(len(names))]


def stage_blocks(concurrent: list, in_turn: list, stages_of: dict) -> list[dict]:
    """Where two builds' call sequences differ, what each side spent.

    Parameters
    ----------
    concurrent, in_turn : list of traces
        Traced runs (``[(kernel, seconds), ...]`` in call order) of the build with the
        stages as rPrograms and of the build with them in turn.
    stages_of : dict
        ``rProgram kernel name -> frozenset of its ops``.

    Returns
    -------
    list of dict
        One per differing block holding at least one rProgram: ``stages`` (the ops of its
        rPrograms, each sorted), ``rprogram_us`` (the concurrent build's calls in the block),
        ``in_turn_us`` (the other build's), ``gain_us`` (in turn less concurrent), and
        ``calls`` (the two sides' call counts).
    """
    names_c, secs_c = call_medians(concurrent)
    names_t, secs_t = call_medians(in_turn)
    matcher = difflib.SequenceMatcher(None, names_c, names_t, autojunk=False)
    blocks = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        stages = [sorted(stages_of[n]) for n in names_c[i1:i2] if n in stages_of]
        if tag == "equal" or not stages:
            continue
        mine, theirs = sum(secs_c[i1:i2]) * 1e6, sum(secs_t[j1:j2]) * 1e6
        blocks.append({"stages": stages, "rprogram_us": round(mine, 1),
                       "in_turn_us": round(theirs, 1), "gain_us": round(theirs - mine, 1),
                       "calls": [i2 - i1, j2 - j1]})
    return blocks


def in_situ_keep(blocks: list[dict], ranked: list[tuple]) -> set[tuple]:
    """The ranked stages (op tuples) of the blocks that gain in the model (a stage's
    rProgram runs its ops, and the glue ops between them its regions took in)."""
    gaining = [set(ops) for b in blocks if b["gain_us"] > 0 for ops in b["stages"]]
    keep = {stage for stage in ranked if any(set(stage) <= ops for ops in gaining)}
    logger.info("in situ: %d of %d blocks gain, %d of %d ranked stages kept (%s us)",
                sum(b["gain_us"] > 0 for b in blocks), len(blocks), len(keep), len(ranked),
                [b["gain_us"] for b in blocks])
    return keep
