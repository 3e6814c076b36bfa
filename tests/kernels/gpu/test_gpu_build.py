"""Persistent kernels built through TVM and compiled by nvcc/ptxas for sm_80..sm_90 without
a GPU: the register budget is enforced by the kernel's own ``__launch_bounds__``."""
import re
import shutil
import subprocess

import pytest

from tvm_ios import _tvm
from tvm_ios.cost.analytical import AnalyticalCostModel
from tvm_ios.graph.extract import extract
from tvm_ios.kernels.gpu.programs import cuda_rprograms
from tvm_ios.kernels.vdevice import VDEVICES, ResidencyError, register_budget
from tvm_ios.schedule.ios import ios_schedule
from tvm_ios.testing import dag_model

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
ARCHS = {"sm_80": {"kind": "cuda", "arch": "sm_80"}, "sm_86": {"kind": "cuda", "arch": "sm_86"},
         "sm_89": {"kind": "cuda", "arch": "sm_89"}, "sm_90a": "nvidia/nvidia-h100"}


def _ptxas_registers(source: str, arch: str, tmp_path) -> dict[str, int]:
    """Registers ptxas gives each kernel of ``source`` (no -maxrregcount: only what the
    source itself says)."""
    src = tmp_path / "k.cu"
    src.write_text(source)
    out = subprocess.run(["nvcc", "-cubin", f"-arch={arch}", "-Xptxas", "-v", "-o",
                          str(tmp_path / "k.cubin"), str(src)],
                         capture_output=True, text=True, check=True)
    names = re.findall(r"Compiling entry function '(\w+)'", out.stderr)
    regs = [int(n) for n in re.findall(r"Used (\d+) registers", out.stderr)]
    return dict(zip(names, regs))


@pytest.fixture(scope="module")
def programs():
    mod, _ = dag_model(3, num_ops=8, channels=16, size=14, p=0.35)
    schedule = ios_schedule(extract(mod["main"]).graph, AnalyticalCostModel("h100"),
                            strategy="parallel")
    return {arch: cuda_rprograms(mod, target, "ios", schedule=schedule)
            for arch, target in ARCHS.items()}


def test_each_arch_gets_its_preset(programs):
    names = {arch: {gen.summary["vdevice"] for gen in gens} for arch, gens in programs.items()}
    assert names == {"sm_80": {"a100"}, "sm_86": {"a10"}, "sm_89": {"l4"}, "sm_90a": {"h100"}}
    for arch, gens in programs.items():
        for gen in gens:
            assert gen.summary["veus"] <= gen.summary["max_resident_veus"]


@needs_nvcc
@pytest.mark.parametrize("arch", sorted(ARCHS))
def test_kernels_compile_within_their_register_budget(programs, arch, tmp_path):
    target = _tvm.make_target(ARCHS[arch])
    for gen in programs[arch]:
        assert len(_tvm.compile_cuda(gen.source, target)) > 0
        used = _ptxas_registers(gen.source, str(target.attrs["arch"]), tmp_path)
        main = f"{gen.program.name}_kernel_1"
        assert used[main] <= gen.summary["max_registers_per_thread"]


@needs_nvcc
def test_launch_bounds_really_bind_the_registers(tmp_path):
    """With as many blocks per SM as threads allow, the budget (32 registers) is below what
    ptxas gives the same kernel without ``__launch_bounds__``: the bound, not luck, keeps the
    registers in; and the generated source stays within its own budget."""
    mod, _ = dag_model(3, num_ops=8, channels=16, size=14, p=0.35)
    gen = max(cuda_rprograms(mod, {"kind": "cuda", "arch": "sm_80"}, "wavefront"),
              key=lambda g: g.summary["launch_bounds_min_blocks"])
    main = f"{gen.program.name}_kernel_1"
    budget, blocks = gen.summary["max_registers_per_thread"], gen.summary[
        "launch_bounds_min_blocks"]
    threads = gen.summary["threads_per_veu"]
    bounded = f"__launch_bounds__({threads}, {blocks}) {main}("
    assert bounded in gen.source
    a100 = VDEVICES["a100"]
    most = a100.max_threads_per_sm // threads  # blocks per SM, as many as threads allow
    forced = gen.source.replace(bounded, f"__launch_bounds__({threads}, {most}) {main}(")
    free = gen.source.replace(bounded, f"__launch_bounds__({threads}) {main}(")
    tight = register_budget(a100, most * a100.sms, threads)
    assert tight == 32
    assert _ptxas_registers(forced, "sm_80", tmp_path)[main] <= tight
    assert _ptxas_registers(free, "sm_80", tmp_path)[main] > tight  # the bound binds
    assert _ptxas_registers(gen.source, "sm_80", tmp_path)[main] <= budget


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
    from tvm_ios import models

    mod, params = models.get(name, image_size=size)
    mod = _tvm.bind_params(mod, params)
    schedule = ios_schedule(extract(mod["main"]).graph, AnalyticalCostModel("h100"),
                            strategy="parallel")
    generated = cuda_rprograms(mod, "nvidia/nvidia-h100", "ios", schedule=schedule)
    assert generated
    gen = max(generated, key=lambda g: g.summary["rtasks"])
    used = _ptxas_registers(gen.source, "sm_90a", tmp_path)
    assert used[f"{gen.program.name}_kernel_1"] <= gen.summary["max_registers_per_thread"]
