"""The ``tvm-ios`` command line: one module a subcommand, and what they share.

Modules:

* :mod:`.bench_run`: ``tvm-ios bench-run DIR``: check a benchmark artifact against its
  reference and time it.
* :mod:`.bench_table`: Command line of the results page: ``python -m tvm_ios.cli.bench_table
  RESULTS.json... -o PAGE``.
* :mod:`.bench_torch`: Command line of the PyTorch baselines: ``python -m
  tvm_ios.cli.bench_torch DIR...``.
* :mod:`.build`: ``tvm-ios build``: cross-compile a model into a benchmark artifact (no GPU
  needed).
* :mod:`.codegen`: ``tvm-ios codegen``: each rProgram's persistent kernel, and its run under a
  GPU simulator.
* :mod:`.common`: Helpers shared by the subcommands: model loading, options, JSON output,
  progress.
* :mod:`.compile`: ``tvm-ios compile``: build a model through the tvm-ios pipeline into a
  library (as tvmc compile).
* :mod:`.graphturbo`: ``tvm-ios graphturbo``: GraphTurbo's sub-graphs, instances, order and
  Table-3 figures.
* :mod:`.kernels_option`: ``--kernels DIR|auto|none``: the option every building verb takes,
  and what it opens.
* :mod:`.main`: The ``tvm-ios`` command line: one subcommand per module of this package.
* :mod:`.pipeline`: ``tvm-ios pipeline``: schedule a CNN pipeline over execution places and
  report it.
* :mod:`.run`: ``tvm-ios run``: run a model through the tvm-ios pipeline and TVM's default
  build, compare.
* :mod:`.schedule`: ``tvm-ios schedule``: schedule a model and print the stage table (and
  JSON).
* :mod:`.stats`: ``tvm-ios stats``: the IOS search space per block (n, width, transitions,
  schedules).
* :mod:`.tune`: ``tvm-ios tune``: measure a model's stages on a target, keep them in a log,
  schedule.
* :mod:`.tune_kernels`: ``tvm-ios tune-kernels``: tune the kernels a model's builds call, with
  TVM's meta_schedule.
"""
