"""Which CPUs run the kernels of a database tuned on another (tvm_ios.tuning.cpu_compat)."""
from tvm_ios.tuning.cpu_compat import _isa, incompatibility

OLD = {"kind": "llvm", "mcpu": "x86-64-v2", "num-cores": 2}     # SSE4.2, no AVX
NEW = {"kind": "llvm", "mcpu": "sapphirerapids", "num-cores": 2}  # AVX-512, AMX


def test_a_newer_cpu_of_the_line_runs_an_older_ones_code():
    assert incompatibility(OLD, NEW) is None
    assert incompatibility(NEW, NEW) is None


def test_an_older_cpu_lacks_the_newer_ones_instructions_and_says_which():
    why = incompatibility(NEW, OLD)
    assert why is not None and why.startswith("x86-64-v2 lacks")
    assert "avx" in why


def test_core_count_and_triple_must_agree():
    assert incompatibility({**OLD, "num-cores": 4}, OLD) == "num-cores 4 is not 2"
    arm = {"kind": "llvm", "mtriple": "aarch64-linux-gnu", "mcpu": "cortex-a72",
           "num-cores": 2}
    assert incompatibility(arm, OLD).startswith("triple aarch64-linux-gnu is not")


def test_tuning_hints_are_not_instructions():
    assert _isa({"avx512f", "fast-gather", "prefer-256-bit", "false-deps-popcnt",
                 "slow-3ops-lea"}) == {"avx512f"}
