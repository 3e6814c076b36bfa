"""GraphTurbo instances as rTasks: the rewritten modules match the original on llvm, keep
tensors on their vEU, and compile for CUDA with the kept outputs in shared memory."""
import os

os.environ.setdefault("TVM_NUM_THREADS", "2")  # before TVM creates its pool: 2 vEUs

import re
import shutil

import pytest
import tvm

from tvm_ios import models
from tvm_ios.graphturbo.hwspec import HardwareSpec
from tvm_ios.passes.graphturbo_attr import load
from tvm_ios.passes.graphturbo_rprogram import GraphTurboRProgramPass, default_hw
from tvm_ios.passes.rprogram_pass import RProgramPass
from tvm_ios.passes.split_instances import SplitInstances
from tvm_ios.runtime.compare import compare_modules
from tvm_ios.testing import dag_model

H100 = "nvidia/nvidia-h100"


def tiny(lb_bytes):
    """Instances of a few KB: the small models split into several parts per sub-graph."""
    return HardwareSpec("tiny", 2, 1, lb_bytes, 1 << 20, 20.0, 50.0)


def _check(mod, params, rewrite, tol=1e-5):
    new = rewrite(mod)
    record = load(new, "main")
    assert rewrite.programs and record["rprogram"]["programs"]
    result = compare_modules(mod, new, params)
    assert result.max_abs_value > 0
    assert result.max_abs_diff <= tol * max(1.0, result.max_abs_value)
    return new, record


def test_small_dag_instances_run_as_rtasks_and_match():
    mod, params = dag_model(0, num_ops=8, channels=8, size=16, p=0.3)
    rewrite = GraphTurboRProgramPass(tiny(12 * 1024), num_veus=2)
    before = mod.clone()
    new, record = _check(mod, params, rewrite)
    tvm.ir.assert_structural_equal(mod, before)  # the caller's module is left as it was
    program = rewrite.programs[0]
    # instances of one sub-graph on both vEUs; every barrier waits for one vEU's step
    assert program.num_veus == 2 and all(program.prog)
    barriers = [t for tasks in program.prog for t in tasks if t.kind == "barrier"]
    assert barriers and all(len(t.waits) == 1 for t in barriers)
    # kept tensors live in the per-vEU arena of the kernel's workspace, as views
    local = program.meta["local_ops"]
    assert set(local.values()) == {0, 1}
    text = str(new[program.name])
    assert "rp_veu_scratch = T.sblock_alloc_buffer" in text
    views = re.findall(r"_v([01]) = (?:T\.decl_buffer\(.*data=)?rp_veu_scratch\.(?:data|view)",
                       text)
    assert set(views) == {"0", "1"} and len(views) > 2
    traffic = record["rprogram"]["traffic"]
    assert traffic["rtasks"]["bytes"] < traffic["instances"]["bytes"]
    assert traffic["rtasks"]["kept_bytes"] > 0


def test_reduced_mobilenet_v2_matches():
    mod, params = models.get("mobilenet_v2", batch_size=1, image_size=32)
    rewrite = GraphTurboRProgramPass(tiny(48 * 1024), num_veus=2, max_ops=16)
    _, record = _check(mod, params, rewrite, tol=1e-4)
    assert len(record["plan"]["order"]) > len(record["plan"]["sgs"])  # some SG is split
    assert any(p["veus"] == 2 for p in record["rprogram"]["programs"])


@pytest.mark.slow
@pytest.mark.parametrize("model, below_original", [("resnet50", False),
                                                   ("mobilenet_v2", True)])
def test_full_size_models_match(model, below_original):
    mod, params = models.get(model, batch_size=1, image_size=224)
    rewrite = GraphTurboRProgramPass("cpu", num_veus=2)
    _, record = _check(mod, params, rewrite, tol=1e-4)
    traffic = {k: v["bytes"] for k, v in record["rprogram"]["traffic"].items()}
    assert traffic["rtasks"] < traffic["instances"]  # the kept tensors cost nothing
    # ResNet-50's split instances re-read their inputs' halos and overlaps: more than the
    # original moves (254 MB against 202, the table in docs/design/graphturbo.md); MobileNet-v2's kept
    # instance outputs cut it to a third
    assert (traffic["rtasks"] < traffic["original"]) == below_original


def test_needs_instances_split_inline():
    mod, _ = dag_model(0, num_ops=4, channels=8, size=16)
    with pytest.raises(ValueError, match="no GraphTurbo plan recorded"):
        RProgramPass("instances")(mod)
    outlined = SplitInstances(tiny(12 * 1024))(mod)
    with pytest.raises(ValueError, match="outlined functions"):
        RProgramPass("instances")(outlined)


def test_default_hw_is_one_veu_of_the_target():
    assert default_hw("llvm") == "cpu"
    assert default_hw(H100) == "h100-block"
    assert default_hw({"kind": "cuda", "arch": "sm_80"}) == "a100-block"


def test_cuda_keeps_instance_outputs_in_shared_memory():
    mod, _ = dag_model(1, num_ops=5, channels=8, size=16, p=0.3)
    rewrite = GraphTurboRProgramPass(tiny(8 * 1024), target=H100)
    new = rewrite(mod)
    assert rewrite.programs
    kept = {op for p in rewrite.programs for op in p.meta["local_ops"]}
    assert kept
    source = rewrite.rewrite.backend.source
    # ops of one kernel share a body, their global tensors chosen by op: what nvcc compiles
    assert any(k.op_bodies < len(k.program.ops) for k in rewrite.rewrite.backend.kernels)
    assert re.search(r"float\* \w+_op\d+_ptr\w* = \(float\*\)condval", source)
    # each distinct kernel is one device function the programs call
    functions = {n for k in rewrite.rewrite.backend.kernels for n in k.functions}
    assert sorted(re.findall(r'__device__ void (rtask_\w+)\([^;{]*\) \{', source)) == sorted(
        functions)
    assert re.search(r"__shared__ alignas\(\d+\) float rp_kept_ptr\[\d+\];", source)
    assert re.search(r"rtask_\w+\([^;]*\brp_kept_ptr\b[^;]*\);", source)  # passed on
    uses = [line for line in source.splitlines()  # and used by the functions
            if "rp_kept[" in line and "__shared__" not in line]
    assert any(re.search(r"rp_kept\[[^\]]+\] = ", line) for line in uses)  # written
    assert any(re.search(r"= .*rp_kept\[", line) for line in uses)  # and read
    executable = tvm.compile(new, target=tvm.target.Target(H100))
    assert executable is not None
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed: the CUDA source was not compiled to a cubin")
    from tvm.support import nvcc

    with tvm.target.Target(H100):
        cubin = nvcc.compile_cuda(source, target_format="cubin", compiler="nvcc")
    assert len(cubin) > 1000


def test_a_timing_build_has_neither_wait_nor_argument_checks():
    """``check_waits`` and ``check_args`` reach the rProgram pass: a timing build leaves
    the dataflow block last (no bounded-wait check after it) and the kernels' host stubs
    without TVM's argument checks."""
    mod, _ = dag_model(1, num_ops=5, channels=8, size=16, p=0.3)
    builds = {checks: GraphTurboRProgramPass(tiny(8 * 1024), target=H100,
                                             check_waits=checks, check_args=checks)(mod)
              for checks in (True, False)}
    for checks, new in builds.items():
        last = new["main"].body.blocks[-1]
        assert isinstance(last, tvm.relax.DataflowBlock) is not checks
        (lib,) = new.attrs["external_mods"]
        assert (".byte_offset" in lib.inspect_source("ll")) is checks
