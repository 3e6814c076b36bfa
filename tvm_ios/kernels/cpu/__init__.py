"""The CPU vDevice backend: an rProgram as one TIR PrimFunc of vEU threads.

Modules:

* :mod:`.codegen`: The CPU vDevice backend: one rProgram as one TIR PrimFunc for ``llvm``.
* :mod:`.slicing`: rTasks that are slices of a tuned parallel loop: one op cut across the vEUs
  of a CPU rProgram.
"""
