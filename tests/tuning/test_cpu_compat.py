"""Which CPUs run the kernels of a database tuned on another (tvm_ios.tuning.cpu_compat)."""
from tvm_ios.tuning.cpu_compat import isa_features, incompatibility

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
    assert isa_features({"avx512f", "fast-gather", "prefer-256-bit", "false-deps-popcnt",
                 "slow-3ops-lea"}) == {"avx512f"}


ZEN4_VM = ("fpu sse sse2 ssse3 sse4_1 sse4_2 avx avx2 fma f16c vaes vpclmulqdq "
           "avx_vnni bmi1 bmi2 adx sha_ni")  # a Zen 4 VM that masks AVX-512 (and GFNI)


def test_features_a_vm_hides_are_found_from_its_flags(tmp_path):
    from tvm_ios import _tvm
    from tvm_ios.tuning.cpu_compat import hidden_features, os_cpu_flags

    info = tmp_path / "cpuinfo"
    info.write_text(f"processor\t: 0\nflags\t\t: {ZEN4_VM}\n\nprocessor\t: 1\nflags\t: avx512f\n")
    flags = os_cpu_flags(str(info))
    assert "sse41" in flags and "avx512f" not in flags  # the first CPU's line, spelled alike
    zen4 = _tvm.llvm_cpu_features(_tvm.make_target({"kind": "llvm", "mcpu": "znver4"}))
    hidden = hidden_features(zen4, flags)
    assert "avx512f" in hidden and "avx512vnni" in hidden and "gfni" in hidden
    assert not {"avx2", "fma", "avx", "vaes", "f16c"} & set(hidden)  # what it does run
    assert hidden_features(zen4, flags | {f.replace("-", "") for f in hidden}) == []
    assert hidden_features(zen4, None) == []  # no flags reported: nothing taken to be hidden
    assert os_cpu_flags(str(tmp_path / "absent")) is None


def test_a_target_without_hidden_features_is_named_and_matched_apart():
    from tvm_ios.tuning.cpu_compat import disabled_groups
    from tvm_ios.tuning.kernel_db import target_name

    masked = {"kind": "llvm", "mcpu": "znver4", "num-cores": 2,
              "mattr": ["-avx512f", "-avx512bw", "-gfni"]}
    assert disabled_groups(masked["mattr"]) == ["avx512", "gfni"]
    assert target_name(masked) == "llvm-znver4-no-avx512-no-gfni-2c"
    unmasked = {k: v for k, v in masked.items() if k != "mattr"}
    assert target_name(unmasked) == "llvm-znver4-2c"
    assert incompatibility(unmasked, masked).startswith("mattr")  # AVX-512 code: not here


def test_only_a_target_that_turns_features_off_takes_an_unmasked_ones_schedules():
    from tvm_ios.tuning.cpu_compat import schedules_fit

    zen4 = {"kind": "llvm", "mcpu": "znver4", "num-cores": 2}
    masked = {**zen4, "mattr": ["-avx512f"]}
    assert schedules_fit(zen4, masked)
    assert not schedules_fit(masked, zen4) and not schedules_fit(zen4, zen4)
    assert not schedules_fit(zen4, {**masked, "num-cores": 4})
    assert not schedules_fit(zen4, {**zen4, "mattr": ["+avx512f"]})
    assert not schedules_fit({**zen4, "mcpu": "graniterapids"}, masked)  # AMX: not a Zen 4
