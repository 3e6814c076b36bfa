"""Build, run and compare: TVM's VM, libraries, RPC and output checks.

Modules:

* :mod:`.compare`: Build, run and compare Relax modules: how every rewrite of tvm-ios is
  checked.
* :mod:`.library`: Libraries that carry their schedule: what ``tvm-ios compile`` exports and
  ``run --lib`` checks.
* :mod:`.outputs`: Outputs of a Relax VM call as a flat list of numpy arrays.
* :mod:`.rpc`: Reaching devices through TVM's RPC tracker: the address, the check that it
  answers, and the inputs a remote run needs.
"""
