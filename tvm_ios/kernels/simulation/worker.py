"""Run one persistent OpenCL kernel with pyopencl; started by :mod:`tvm_ios.kernels.simulation.oclgrind`.

A standalone script (numpy and pyopencl only, no TVM): it runs under the ``oclgrind``
wrapper, which makes the Oclgrind simulator the process's OpenCL platform. Usage::

    oclgrind [--data-races] --num-threads N python _oclgrind_worker.py DIR

``DIR/spec.json`` names the source file, the kernels (``zero`` then ``main``), the main
kernel's parameters in order, the work sizes, the outputs and the launches; ``DIR/inputs.npz``
holds every parameter's initial array. A launch runs the zero kernel (if ``zero_first`` and
it is the first) then the main kernel; later launches run the main kernel alone on the same
buffers (its steps must have been left zero). ``DIR/result.npz`` gets each output and
``rp_steps`` after each launch (``launch<k>/<name>``) and the launch's seconds.
"""
import json
import sys
import time
from pathlib import Path

import numpy as np
import pyopencl as cl


def main(folder: str) -> int:
    """Build the source, run the launches, save the results."""
    root = Path(folder)
    spec = json.loads((root / "spec.json").read_text())
    arrays = dict(np.load(root / "inputs.npz"))
    ctx = cl.Context(cl.get_platforms()[0].get_devices()[:1])
    queue = cl.CommandQueue(ctx)
    program = cl.Program(ctx, (root / spec["source"]).read_text()).build(options=["-w"])
    flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
    bufs = {name: cl.Buffer(ctx, flags, hostbuf=np.ascontiguousarray(arrays[name]))
            for name in spec["params"]}
    zero = getattr(program, spec["zero_kernel"])
    main_kernel = getattr(program, spec["main_kernel"])
    threads, groups = spec["local_size"], spec["num_groups"]
    results = {}
    for launch in range(spec["launches"]):
        start = time.time()
        if launch == 0 and spec["zero_first"]:
            zero(queue, (spec["zero_threads"],), (spec["zero_threads"],), bufs["rp_steps"])
        main_kernel(queue, (groups * threads,), (threads,),
                    *[bufs[name] for name in spec["params"]])
        queue.finish()
        for name in spec["outputs"] + ["rp_steps"]:
            out = np.empty_like(arrays[name])
            cl.enqueue_copy(queue, out, bufs[name])
            results[f"launch{launch}/{name}"] = out
        queue.finish()
        results[f"launch{launch}/seconds"] = np.array(time.time() - start)
    np.savez(root / "result.npz", **results)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
