"""RProgramPass for GPU targets: the rewritten module compiles for sm_90a (and OpenCL) here,
no GPU needed, and launches one persistent rProgram kernel per region, each call with its
own zeroed step workspace and a bounded-wait check; on a GPU it matches the original."""
import re

import pytest
import tvm
import tvm_ffi
from tvm import relax

from tvm_ios.bench.artifact import cuda_sources
from tvm_ios import _tvm
from tvm_ios.cost.analytical import AnalyticalCostModel
from tvm_ios.kernels.gpu.build import device_sources
from tvm_ios.passes.rprogram_pass import RProgramPass
from tvm_ios.testing import dag_model

H100 = "nvidia/nvidia-h100"


def _packed_calls(func) -> list[str]:
    """Names of the call_dps_packed targets in ``func``, in order."""
    names = []

    def visit(node):
        if isinstance(node, relax.Call) and getattr(node.op, "name", "") == \
                "relax.call_dps_packed":
            names.append(str(node.args[0].global_symbol))
    relax.analysis.post_order_visit(func.body, visit)
    return names


def _kernels(source: str) -> set[str]:
    """Names of the persistent rProgram kernels (with min-blocks launch bounds) in a CUDA
    source."""
    return set(re.findall(r'__global__ void __launch_bounds__\(\d+, \d+\) (\w+)\(', source))


def _is_int32(expr) -> bool:
    return isinstance(expr.ty, relax.TensorType) and str(expr.ty.dtype) == "int32"


def _check_compiled(new, rewrite):
    """One launch per built region in main; the library holds TVM's kernels and ours."""
    names = [p.name for p in rewrite.programs]
    assert rewrite.programs and len(names) <= rewrite.planned
    assert sorted(_packed_calls(new["main"])) == sorted(names)
    executable = tvm.compile(new, target=tvm.target.Target(H100))
    sources = cuda_sources(executable)
    assert len(sources) == 2  # TVM's own kernels, then the rProgram kernels
    ours = sources[1]
    assert "st.release.gpu.global.s32" in ours and "ld.acquire.gpu.global.s32" in ours
    assert "atomic_add" in ours and "atomic_cas" in ours and "bar.sync" not in ours
    assert _kernels(ours) == {f"{name}_kernel_1" for name in names}
    assert not any("_ios_stage" in k or "_wave" in k for k in re.findall(
        r"__global__ void [^(]*?(\w+)\(", sources[0]))
    return executable


@pytest.mark.parametrize("policy", ["ios", "wavefront"])
def test_dag_rewrite_compiles_for_h100(policy):
    mod, _ = dag_model(3, num_ops=8, channels=16, size=14, p=0.35)
    rewrite = RProgramPass(policy, target=H100)
    new = rewrite(mod)
    assert rewrite.vdevice.name == "h100"
    _check_compiled(new, rewrite)
    assert not _packed_calls(mod["main"])  # the caller's module is left as it was


def _calls(func, name):
    return [b.value for block in func.body.blocks for b in block.bindings
            if isinstance(b.value, relax.Call) and isinstance(b.value.args[0], relax.ExternFunc)
            and b.value.args[0].global_symbol == name]


def test_tables_are_constants_and_steps_a_workspace_per_call():
    mod, _ = dag_model(3, num_ops=8, channels=16, size=14, p=0.35)
    rewrite = RProgramPass("ios", target=H100)
    new = rewrite(mod)
    program = rewrite.programs[0]
    (call,) = _calls(new["main"], program.name)
    consts = [a for a in call.args[1].fields if isinstance(a, tvm.ir.Constant) and _is_int32(a)]
    assert len(consts) == 5  # offsets, entries, wait_offsets, waits, config
    steps = call.ty.fields[-1]  # the step array is the call's last output
    assert [int(d) for d in steps.shape.values] == [program.num_veus + 5]
    assert len(new.attrs["external_mods"]) == 1


def test_programs_with_equal_veu_counts_do_not_share_steps():
    """Two programs of the same vEU count: each call's steps are its own output (the VM
    allocates them per call), never a constant the VM could de-duplicate."""
    mod, _ = dag_model(2, num_ops=8, channels=8, size=8, p=0.35)  # two stages of 6 vEUs
    rewrite = RProgramPass("ios", target=H100)
    new = rewrite(mod)
    counts = [p.num_veus for p in rewrite.programs]
    twins = [p for p in rewrite.programs if counts.count(p.num_veus) > 1]
    assert len(twins) >= 2, counts
    words = twins[0].num_veus + 5
    for program in twins:
        (call,) = _calls(new["main"], program.name)
        assert [int(d) for d in call.ty.fields[-1].shape.values] == [words]  # an output
        assert not [a for a in call.args[1].fields if isinstance(a, tvm.ir.Constant)
                    and [int(d) for d in a.ty.shape.values] == [words]]
    zeroing = re.findall(r"void __launch_bounds__\(128\) (\w+_kernel)\(int\* __restrict__ "
                         r"rp_steps_ptr\)", rewrite.backend.source)
    assert set(zeroing) == {f"{p.name}_kernel" for p in rewrite.programs}


def test_bounded_wait_records_are_checked_after_the_dataflow():
    mod, _ = dag_model(3, num_ops=8, channels=16, size=14, p=0.35)
    rewrite = RProgramPass("ios", target=H100)
    new = rewrite(mod)
    last = new["main"].body.blocks[-1]
    assert not isinstance(last, relax.DataflowBlock)
    asserts = [b.value for b in last.bindings
               if getattr(b.value.op, "name", "") == "relax.assert_op"]
    assert len(asserts) == len(rewrite.programs)
    for program, check in zip(rewrite.programs, asserts):
        assert f"rProgram {program.name}: vEU {{}} waited past its bound" in check.args[1].value
    unchecked = RProgramPass("ios", target=H100, check_waits=False)(mod)
    assert isinstance(unchecked["main"].body.blocks[-1], relax.DataflowBlock)


def _argument_checks(new) -> int:
    """Assertions on the arguments' offsets in the host code of the rProgram kernels."""
    (lib,) = new.attrs["external_mods"]
    return lib.inspect_source("ll").count(".byte_offset")


def test_host_stubs_check_their_arguments_unless_told_not_to():
    """TVM's checks of each argument (here: its byte offset) are in the host stubs of a
    correctness build; a timing build has none, and still launches every program."""
    mod, _ = dag_model(3, num_ops=8, channels=16, size=14, p=0.35)
    checked = RProgramPass("ios", target=H100)
    new = checked(mod)
    tensors = sum(len(k.inputs) + len(k.outputs) for k in checked.backend.kernels)
    assert tensors and _argument_checks(new) >= tensors
    timing = RProgramPass("ios", target=H100, check_args=False, check_waits=False)
    new = timing(mod)
    assert _argument_checks(new) == 0
    _check_compiled(new, timing)


def test_llvm_default_and_bad_arguments():
    mod, _ = dag_model(1, num_ops=4)
    before = tvm_ffi.structural_hash(mod["main"])
    default = RProgramPass("ios", cost_model=AnalyticalCostModel("h100"))
    assert default.backend is None  # the target is the compile target, known when it runs
    default(mod)
    assert default.backend.device == "cpu" and default.backend.kind == "llvm"
    assert tvm_ffi.structural_hash(mod["main"]) == before
    with pytest.raises(ValueError, match="num_veus sets the CPU vDevice"):
        RProgramPass("ios", num_veus=4, target=H100)
    with pytest.raises(ValueError, match="no rProgram backend for target kind 'c'"):
        RProgramPass("ios", target="c")


def test_the_pass_takes_and_checks_the_compile_target():
    mod, _ = dag_model(3, num_ops=8, channels=16, size=14, p=0.35)
    rewrite = RProgramPass("ios")
    with tvm.target.Target(H100):
        new = rewrite(mod)
    assert rewrite.backend.kind == "cuda" and _packed_calls(new["main"])
    with pytest.raises(ValueError, match="made for target cuda sm_90a but the module is "
                                         "compiled for cuda sm_80"):
        with tvm.target.Target({"kind": "cuda", "arch": "sm_80"}):
            RProgramPass("ios", target=H100)(mod)
    with pytest.raises(ValueError, match="compiled for llvm"):
        with tvm.target.Target("llvm"):
            RProgramPass("ios", target=H100)(mod)


def test_opencl_backend_builds_a_module_tvm_compiles():
    """``target="opencl"``: persistent OpenCL kernels in an OpenCL module beside TVM's own
    OpenCL kernels (this TVM wheel has no OpenCL runtime to run it; the simulator runs the
    same source in tests/kernels/test_oclgrind.py)."""
    mod, _ = dag_model(3, num_ops=8, channels=16, size=14, p=0.35)
    rewrite = RProgramPass("wavefront", target="opencl")
    new = rewrite(mod)
    assert rewrite.programs and rewrite.vdevice.name == "opencl"
    assert sorted(_packed_calls(new["main"])) == sorted(p.name for p in rewrite.programs)
    executable = tvm.compile(new, target=tvm.target.Target("opencl"))
    ours = [s for s in device_sources(executable.mod, "opencl") if "rp_offsets" in s]
    assert len(ours) == 1 and "barrier(3)" in ours[0] and "__local float rp_smem" in ours[0]


@pytest.mark.parametrize("name,size,least", [
    ("inception_v3", 75, 10),  # every planned stage, avg pools included
    # at 32 TVM's own CUDA build of NASNet fails (dlight GEMV)
    pytest.param("nasnet_a", 64, 4, marks=pytest.mark.slow)])
def test_zoo_model_compiles_for_h100(name, size, least):
    from tvm_ios import models

    mod, _ = models.get(name, image_size=size)
    rewrite = RProgramPass("ios", target=H100)
    new = rewrite(mod)
    assert len(rewrite.programs) == rewrite.planned >= least
    _check_compiled(new, rewrite)


@pytest.fixture
def gpu_target():
    """The CUDA target of this host's GPU (its own architecture, one of the presets)."""
    from tvm_ios.kernels.vdevice import ARCH_PRESETS

    arch = "sm_" + str(tvm.cuda(0).compute_version).replace(".", "")
    if arch not in ARCH_PRESETS:
        pytest.skip(f"this GPU is {arch}; the rProgram presets are {sorted(ARCH_PRESETS)}")
    return tvm.target.Target({"kind": "cuda", "arch": arch})


def _gpu_model(name):
    if name.startswith("dag"):
        return dag_model(3, num_ops=8, channels=16, size=14, p=0.35)
    from tvm_ios import models

    model, size = name.split(":")
    return models.get(model, image_size=int(size))


@pytest.mark.gpu
@pytest.mark.parametrize("name,policy", [("dag", "ios"), ("dag", "wavefront"),
                                         ("squeezenet:64", "ios"), ("inception_v3:75", "ios"),
                                         ("squeezenet:64", "wavefront")])
def test_gpu_rewrite_matches_the_llvm_reference(gpu_target, name, policy):
    """The GPU tier: each CUDA rewrite, run on this GPU, against TVM's llvm build of the
    original (``pytest -m gpu -rA`` lists which ran)."""
    from tvm_ios.runtime.compare import build, random_inputs, run

    mod, params = _gpu_model(name)
    rewrite = RProgramPass(policy, target=gpu_target)
    new = rewrite(mod)
    assert rewrite.programs
    inputs = random_inputs(_tvm.bind_params(mod, params), seed=0)
    reference = run(build(mod, "llvm", params), inputs)
    outputs = run(build(new, gpu_target, params), inputs, tvm.cuda(0))
    reference = reference if isinstance(reference, list) else [reference]
    outputs = outputs if isinstance(outputs, list) else [outputs]
    scale = max(1.0, max(float(abs(r).max()) for r in reference))
    for ref, out in zip(reference, outputs):
        assert abs(out - ref).max() <= 1e-3 * scale


def test_one_pass_object_rewrites_two_modules():
    rewrite = RProgramPass("ios", target=H100)
    first = rewrite(dag_model(3, num_ops=8, channels=16, size=14, p=0.35)[0])
    second = rewrite(dag_model(3, num_ops=8, channels=16, size=14, p=0.35)[0])
    assert len(second.attrs["external_mods"]) == 1
    assert _packed_calls(first["main"]) == _packed_calls(second["main"])
    assert _kernels(rewrite.backend.source) == {f"{p.name}_kernel_1" for p in rewrite.programs}
