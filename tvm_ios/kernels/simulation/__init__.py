"""The persistent kernels run under the Oclgrind OpenCL simulator (no GPU needed).

Modules:

* :mod:`.check`: Check persistent rProgram kernels by running their OpenCL rendering under
  Oclgrind.
* :mod:`.oclgrind`: Run a persistent rProgram kernel under the Oclgrind OpenCL simulator and
  read its verdict.
* :mod:`.shim`: A preloaded shim that keeps Oclgrind's race detector from drowning in
  cross-group reports.
* :mod:`.worker`: Run one persistent OpenCL kernel with pyopencl; started by
  :mod:`tvm_ios.kernels.simulation.oclgrind`.
"""
