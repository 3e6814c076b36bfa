"""rPrograms and their kernels: the engine's core, with one sub-package per backend.

Modules:

* :mod:`.blocked_conv`: Legalization of ``relax.nn.conv2d`` in blocked layouts (``NCHW16c``
  data, ``OIHW16i16o`` weights), which TVM's own refuses ("cannot be legalized by TOPI at this
  moment").
* :mod:`.bounded_wait`: Bounded waits: a vEU that waits too long gives up, and the host says
  who waited for what.
* :mod:`.instance_policy`: The ``instances`` policy: GraphTurbo's sub-graph instances as
  rTasks of rPrograms.
* :mod:`.interpreter`: Execute an rProgram's semantics: prove it cannot deadlock, check
  dependencies, estimate time.
* :mod:`.policies`: Policies that turn an op graph into rPrograms: Rammer's wavefront and an
  IOS-stage policy.
* :mod:`.prepack`: Prepacked weights: meta_schedule's weight layout rewrite in the sequential
  build.
* :mod:`.program_regions`: Regions of rPrograms in a Relax function: op graph with glue nodes,
  stages with glue.
* :mod:`.roperator`: rOperators: an op as rKernels, each a way to cut it into rTasks (Rammer
  section 3.1).
* :mod:`.rprogram`: The rProgram: a static plan ``prog[vEU][order]`` of rTasks on persistent
  workers (Rammer).
* :mod:`.tir_util`: Small TIR builders shared by the kernel generators (CPU vDevice,
  persistent GPU kernel).
* :mod:`.traffic`: Activation traffic through global memory of a Relax function run kernel by
  kernel.
* :mod:`.tuned_build`: Tuned kernels into a build: legalize and fuse, apply a kernel database,
  count what it hit.
* :mod:`.tvm_kernels`: TVM's own kernels of an op: legalized and fused PrimFuncs, and their
  inlining by buffer.
* :mod:`.vdevice`: The vDevice: how many vEUs can be resident at once, from occupancy, and
  never more.
* :mod:`.veu_memory`: vEU-local tensors of an rProgram: one scratch arena per vEU, space
  reused by liveness.

Sub-packages: :mod:`.cpu`, :mod:`.gpu`, :mod:`.simulation`.
"""
