"""The op graph: units extracted from a Relax function, and set-of-ops utilities.

Modules:

* :mod:`.analysis`: Reachability, components and width of an
  :class:`~tvm_ios.graph.opgraph.OpGraph`.
* :mod:`.bitset`: Bitset helpers: sets of graph nodes are Python ints, bit ``i`` standing for
  node ``i``.
* :mod:`.blocks`: Blocks of an :class:`OpGraph`: where a schedule search may be cut, and where
  it must be.
* :mod:`.extract`: Extract the :class:`OpGraph` of a Relax function: schedulable units and
  their edges.
* :mod:`.opgraph`: The operator graph: the schedulable units of a model and the data flowing
  between them.
* :mod:`.opinfo`: What the graph extractor knows about Relax operators: their role and their
  cost.
"""
