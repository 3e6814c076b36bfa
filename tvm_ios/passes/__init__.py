"""Relax passes: each applies a decision (a schedule, rPrograms, a GraphTurbo plan).

Modules:

* :mod:`.apply_schedule`: ``ApplySchedule``: rewrite a Relax function to follow a given stage
  schedule.
* :mod:`.blocked_layout`: ``BlockedLayout``: convolutions in TVM's blocked ``NCHW{b}c``
  layout, end to end.
* :mod:`.dedup_ops`: ``DedupOps``: an operator call that repeats another (same operator, same
  arguments, same attributes) computed once.
* :mod:`.fold_layout_transforms`: ``FoldLayoutTransforms``: the layout transforms of constant
  weights, folded with numpy.
* :mod:`.graphturbo_attr`: Where the GraphTurbo passes keep their decisions: one JSON module
  attribute.
* :mod:`.graphturbo_rprogram`: ``GraphTurboRProgramPass``: GraphTurbo's instances run as
  rTasks of persistent kernels.
* :mod:`.group_subgraphs`: ``GroupSubgraphs``: GraphTurbo's grouping (Algorithm 2) of a Relax
  function's layers.
* :mod:`.instance_emitter`: Mechanics shared by the GraphTurbo passes: emitting sub-graph
  instances on slices.
* :mod:`.instance_regions`: Emission items of ``RProgramPass(policy="instances")``: GraphTurbo
  instances as rTasks.
* :mod:`.ios_pass`: ``IOSPass``: schedule a Relax function with IOS and apply the schedule.
* :mod:`.kernel_guard`: A graph rewrite kept only where a kernel database holds the kernels it
  makes.
* :mod:`.order_instances`: ``OrderInstances``: put GraphTurbo's instances in the order the
  plan chose.
* :mod:`.partition_stages`: ``PartitionStages``: cut a Relax function into pipeline stage
  functions.
* :mod:`.rprogram_backends`: The backends of ``RProgramPass``: the CPU vDevice (``llvm``) and
  persistent GPU kernels.
* :mod:`.rprogram_pass`: ``RProgramPass``: run each multi-group stage (or wavefront rProgram)
  as one kernel.
* :mod:`.split_instances`: ``SplitInstances``: cut GraphTurbo's sub-graphs into instances
  computed on slices.
* :mod:`.stage_rewriter`: Mechanics shared by the schedule passes: binding order and
  operator-merge emission.
* :mod:`.trim_dead_taps`: ``TrimDeadTaps``: drop the kernel taps of a convolution that only
  ever read padding.
"""
