"""The schedulers: IOS's dynamic program and its baselines; they decide, return plain data.

Modules:

* :mod:`.baselines`: Baseline schedules: sequential (one op per stage) and greedy (all ready
  ops per stage).
* :mod:`.cost_protocol`: The cost-model protocol the schedulers are written against.
* :mod:`.downsets`: The exact IOS search: a dynamic program over every downset of a graph,
  level by level.
* :mod:`.groups`: The groups a stage can hold: connected, convex sets of at most r schedulable
  ops.
* :mod:`.ios`: IOS: the best stage schedule of a graph under a cost model (Algorithm 1 of the
  thesis).
* :mod:`.merge`: Operator merge: when a set of convolutions can run as one, and the merged
  conv's shape.
* :mod:`.pricing`: GenerateStage of Algorithm 1: the latency and strategy of stages, many at
  once.
* :mod:`.schedule`: The schedule: plain, printable, JSON-serialisable data that schedulers
  return.
* :mod:`.stage_enum`: Every stage that can run after each of many states, enumerated at once
  in numpy.
* :mod:`.stats`: Size of the IOS search space per block, as in the thesis's Table 3.1.
* :mod:`.validate`: Check that a schedule is valid for a graph before anything applies it.
"""
