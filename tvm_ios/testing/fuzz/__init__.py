"""Differential fuzzing of the tvm-ios pipelines with random CNNs (``tvm-ios fuzz``).

:mod:`.check` (the oracle: a pipeline against TVM's default build), :mod:`.shrink` (delta
debugging over the op spec), :mod:`.reproducer` (a self-contained directory per finding),
:mod:`.campaign` (seeds x pipelines) and :mod:`.simulate` (the rPrograms under Oclgrind).
"""
from .campaign import run_campaign, summarize
from .check import PIPELINES, TOLERANCE, check_seed, check_spec
from .reproducer import write_reproducer
from .shrink import same_failure, shrink

__all__ = ["run_campaign", "summarize", "PIPELINES", "TOLERANCE", "check_seed", "check_spec",
           "write_reproducer", "same_failure", "shrink"]
