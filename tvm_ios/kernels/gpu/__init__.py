"""The GPU backend: an rProgram as one persistent-thread-block kernel (CUDA, OpenCL).

Modules:

* :mod:`.build`: Build persistent rProgram kernels into a runtime module: CUDA or OpenCL
  source through TVM.
* :mod:`.persistent`: One persistent GPU kernel per rProgram, in TIR, for CUDA and OpenCL
  alike.
* :mod:`.programs`: Plan and generate the persistent rProgram kernels of a Relax model for a
  GPU target.
* :mod:`.residency`: Can every vEU of a persistent kernel be resident on *this* GPU? The
  driver's numbers.
* :mod:`.roperator`: rOperators from TVM's own GPU kernels: dlight-scheduled, lowered, cut at
  ``blockIdx``.
* :mod:`.rtask_mask`: An rTask on fewer threads than its vEU, with every barrier reached by
  every thread.
* :mod:`.sync`: The synchronisation of a persistent kernel, spelled per GPU target in one
  place.
* :mod:`.tir_pipeline`: TVM's own default TIR pipeline, cut where the rTask kernels are
  merged.
"""
