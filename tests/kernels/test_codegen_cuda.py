"""CUDA codegen: rProgram kernels build through TVM and nvcc for sm_90/sm_80 without a GPU."""
import re
import shutil
import subprocess

import pytest
import tvm
from tvm.support import nvcc

from tvm_ios.cost.analytical import AnalyticalCostModel
from tvm_ios.graph.extract import extract
from tvm_ios.kernels.codegen_cuda import encode_tables, register_budget
from tvm_ios.kernels.cuda_programs import cuda_rprograms
from tvm_ios.kernels.rprogram import RProgram, RTask
from tvm_ios.kernels.vdevice import VDEVICES, ResidencyError
from tvm_ios.schedule.ios import ios_schedule
from tvm_ios.testing import dag_model

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


def _compile(source, target, regs, tmp_path):
    """nvcc cubin via TVM's helper, and ptxas' register count of the kernel."""
    with tvm.target.Target(target):
        cubin = nvcc.compile_cuda(source, target_format="cubin", compiler="nvcc",
                                  options=[f"-maxrregcount={regs}"])
    arch = str(tvm.target.Target(target).attrs["arch"])
    src = tmp_path / "k.cu"
    src.write_text(source)
    out = subprocess.run(["nvcc", "-cubin", f"-arch={arch}", f"-maxrregcount={regs}",
                          "-Xptxas", "-v", "-o", str(tmp_path / "k.cubin"), str(src)],
                         capture_output=True, text=True, check=True)
    used = [int(n) for n in re.findall(r"Used (\d+) registers", out.stderr)]
    return cubin, used


@pytest.fixture(scope="module")
def programs():
    mod, _ = dag_model(3, num_ops=8, channels=16, size=14, p=0.35)
    schedule = ios_schedule(extract(mod["main"]).graph, AnalyticalCostModel("h100"),
                            strategy="parallel")
    return {"ios": cuda_rprograms(mod, "nvidia/nvidia-h100", "ios", schedule=schedule),
            "wave80": cuda_rprograms(mod, {"kind": "cuda", "arch": "sm_80"}, "wavefront")}


def test_source_has_release_acquire_and_named_barriers(programs):
    gen = programs["ios"][0]
    src = gen.source
    assert "st.release.gpu.global.s32" in src           # signal after a block barrier
    assert "ld.acquire.gpu.global.s32" in src           # closing acquire of the poll
    assert "__nanosleep" in src                          # back-off while polling
    assert 'asm volatile("bar.sync %0, %1;"' in src      # named barrier instruction
    assert "extern __shared__" in src                    # dynamic shared memory
    assert "atomicAdd" in src                            # in-kernel reset of the steps
    assert gen.summary["named_barrier_ops"]
    per_sm = -(-gen.summary["veus"] // 132)
    assert f"__launch_bounds__({gen.summary['threads_per_veu']}, {per_sm})" in src


def test_named_barrier_counts_threads_of_the_rtask(programs):
    gen = programs["ios"][0]
    calls = re.findall(r"ptx_bar_sync_count_sync\(\(uint\)(\d+), \(uint\)(\d+)\)", gen.source)
    threads = gen.summary["threads_per_veu"]
    assert calls
    assert all(int(i) == 1 and int(n) % 32 == 0 and int(n) < threads for i, n in calls)


@needs_nvcc
@pytest.mark.parametrize("key,target", [("ios", "nvidia/nvidia-h100"),
                                        ("wave80", {"kind": "cuda", "arch": "sm_80"})])
def test_kernels_compile_with_nvcc_within_register_budget(programs, key, target, tmp_path):
    assert programs[key]
    for gen in programs[key]:
        regs = gen.summary["max_registers_per_thread"]
        cubin, used = _compile(gen.source, target, regs, tmp_path)
        assert len(cubin) > 0 and used and max(used) <= regs
        assert gen.summary["veus"] <= gen.summary["max_resident_veus"]


def test_tables_encode_the_program():
    p = RProgram(2)
    p.append(RTask("a", 0), 0)
    p.append(RTask("b", 3), 1)
    p.wait(1, [(0, 0)])
    tables = encode_tables(p, {"a": 0, "b": 1})
    assert tables["offsets"] == [0, 1, 3]
    assert tables["entries"] == [0, 0, 0, 0, 0, 1, 3, 0, 1, -1, 0, 0]
    assert tables["wait_offsets"] == [0, 0, 0, 1] and tables["waits"] == [0, 1]


def test_register_budget_and_refusal():
    h100 = VDEVICES["h100"]
    assert register_budget(h100, 264, 1024) == 32
    assert register_budget(h100, 132, 256) == 248  # 65536 / 256, rounded to 8
    with pytest.raises(ResidencyError, match="registers per thread"):
        register_budget(h100, 132 * 8, 1024)


@needs_nvcc
@pytest.mark.parametrize("name,size", [
    ("inception_v3", 75), pytest.param("nasnet_a", 32, marks=pytest.mark.slow)])
def test_zoo_rprogram_kernels_build_for_sm90(name, size, tmp_path):
    from tvm_ios import _tvm, models

    mod, params = models.get(name, image_size=size)
    mod = _tvm.bind_params(mod, params)
    schedule = ios_schedule(extract(mod["main"]).graph, AnalyticalCostModel("h100"),
                            strategy="parallel")
    generated = cuda_rprograms(mod, "nvidia/nvidia-h100", "ios", schedule=schedule)
    assert generated
    gen = max(generated, key=lambda g: g.summary["rtasks"])
    assert "st.release.gpu.global.s32" in gen.source
    cubin, used = _compile(gen.source, "nvidia/nvidia-h100",
                           gen.summary["max_registers_per_thread"], tmp_path)
    assert len(cubin) > 0 and max(used) <= gen.summary["max_registers_per_thread"]
