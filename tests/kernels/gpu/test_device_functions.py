"""One device function per distinct rTask kernel: what a program calls, what a module keeps,
and how OpenCL gets the bodies back (no GPU needed; Oclgrind runs them in
``tests/kernels/simulation``)."""
import copy
import re
import shutil

import pytest
import tvm

from tvm_ios import _tvm
from tvm_ios.kernels.gpu.build import build_kernels, kernel_signatures
from tvm_ios.kernels.gpu.device_functions import DeviceFunctions
from tvm_ios.kernels.gpu.programs import build_program, plan_programs
from tvm_ios.kernels.gpu.sync import sync_for
from tvm_ios.kernels.tvm_kernels import tensor_buffer
from tvm_ios.testing import dag_model

H100 = "nvidia/nvidia-h100"
tirx = _tvm.tirx
_DEFINED = re.compile(r'extern "C" __device__ void (rtask_\w+)\([^;{]*\) \{')


@pytest.fixture(scope="module")
def plan():
    """A wavefront plan of a DAG whose ops repeat their kernels."""
    mod, _ = dag_model(3, num_ops=6, channels=8, size=8, p=0.35)
    return plan_programs(mod, H100, "wavefront")


def _kernel(plan, target=H100, name=None):
    (ops, program), = plan[0]
    if name is not None:
        program = copy.copy(program)
        program.name = name
    return build_program(program, ops, plan[1], plan[2], _tvm.make_target(target))


def test_ops_of_one_kernel_call_one_function(plan):
    kernel = _kernel(plan)
    kernels = {rop.kernel for rop in kernel.rops.values()}
    assert len(kernel.functions) == len(kernels) < len(kernel.program.ops)
    source = build_kernels(kernel, H100).source
    assert sorted(_DEFINED.findall(source)) == sorted(kernel.functions)


def test_two_programs_share_the_functions_of_their_kernels(plan):
    """Each function is defined once in a module, whichever programs call it, and declared
    ``__noinline__`` where several kernels call it: nvcc compiles it once."""
    first, second = _kernel(plan), _kernel(plan, name="again")
    assert first.functions.keys() == second.functions.keys()
    source = build_kernels([first, second], H100).source
    defined = _DEFINED.findall(source)
    assert sorted(defined) == sorted(first.functions)  # once each
    for name in defined:  # called by both kernels
        assert len(re.findall(rf"\b{name}\(", source)) >= 4  # declared twice, defined, called
        assert re.search(rf'__device__ __noinline__ void {name}\(', source)
    alone = build_kernels(first, H100).source  # one caller: nvcc may inline it
    assert "__noinline__" not in alone
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed: the CUDA source was not compiled")
    ptx = _tvm.compile_cuda(source, H100, "ptx").decode()
    assert len(re.findall(r"^\.(?:visible )?\.?func\b", ptx, re.M)) == len(defined)
    assert len(re.findall(r"\bcall\.uni\b", ptx)) >= 2 * len(defined)


def test_opencl_gets_the_bodies_back(plan):
    kernel = _kernel(plan, "opencl")
    assert kernel.functions
    source = build_kernels(kernel, "opencl").source
    assert "rtask_k" not in source  # TVM's OpenCL codegen prints kernels only: inlined
    assert len(kernel_signatures(source)) == 2  # the zeroing kernel and the program's


def test_a_name_tells_threads_and_views_apart(plan):
    ((ops, _),), gpu, _ = plan
    rop = gpu[ops[0]][0]
    sync = sync_for(_tvm.make_target(H100))
    bufs = [tensor_buffer((4,), "float32", f"b{i}") for i in range(len(rop.params))]
    view = tirx.decl_buffer((4,), "float32", "v", elem_offset=8, scope="shared")
    narrow, wide = (DeviceFunctions(t, sync.smem_scope, sync.block_barrier())
                    for t in (rop.threads, 2 * rop.threads))
    assert narrow.name(rop, bufs) != wide.name(rop, bufs)  # a masked rTask: another body
    assert narrow.name(rop, bufs) != narrow.name(rop, [view] + bufs[1:])


def test_a_view_is_passed_as_its_offset_into_the_arena(plan):
    """Before: a global tensor and a kept view; Expected: the call passes the tensor's
    pointer, the view's offset, the arena and the shared buffer, then rTask and thread."""
    ((ops, _),), gpu, _ = plan
    rop = next(gpu[op][0] for op in ops if gpu[op][0].smem_var is not None)
    sync = sync_for(_tvm.make_target(H100))
    functions = DeviceFunctions(rop.threads, sync.smem_scope, sync.block_barrier())
    bufs = [tensor_buffer(tuple(int(d) for d in p.shape), str(p.dtype), f"b{i}")
            for i, p in enumerate(rop.params)]
    shape = tuple(int(d) for d in rop.params[0].shape)
    view = tirx.decl_buffer(shape, "float32", "v", elem_offset=tirx.IntImm("int32", 40),
                            scope="shared")
    arena = tirx.decl_buffer((1024,), "float32", "rp_kept", scope="shared")
    smem = tirx.decl_buffer((256,), "float32", "rp_smem", scope=sync.smem_scope)
    rtask, tid = tirx.Var("r", "int32"), tirx.Var("t", "int32")
    call = functions.call(rop, [view] + bufs[1:], arena, rtask, tid, smem)
    (name,) = functions.functions
    expected = tirx.Evaluate(tvm.ir.GlobalVar(name)(
        tirx.IntImm("int32", 40), *[b.data for b in bufs[1:]], arena.data, smem.data,
        rtask, tid))
    tvm.ir.assert_structural_equal(call, expected, map_free_vars=True)
    func = functions.functions[name]
    kinds = [str(p.ty) for p in func.params]
    assert kinds[0] == "int32" and "global" in kinds[1]
    assert '"shared"' in kinds[-4] and '"shared.dyn"' in kinds[-3]  # arena, shared buffer
    assert [p.name for p in func.params[-2:]] == ["rtask", "tid"]


def test_a_kernel_without_its_functions_is_refused(plan):
    kernel = _kernel(plan)
    with pytest.raises(ValueError, match="calls device functions not given"):
        build_kernels(kernel.func, H100)
