"""``tvm-ios tune-kernels`` and ``--kernels``: clear errors on bad input (exit 2); the scheduled
builds whose kernels are tuned too."""
import importlib.util
import socket
import time

from tvm_ios.cli import tune_kernels
from tvm_ios.cli.main import main


def test_missing_tuning_extra_is_one_line_naming_the_install(monkeypatch, capsys):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "xgboost" else real(name, *a))
    assert main(["tune-kernels", "--model", "squeezenet", "--image-size", "32"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "xgboost" in err[0] and "pip install 'tvm-ios[tune]'" in err[0]


def test_rpc_tracker_that_does_not_answer_fails_within_its_timeout(tmp_path, capsys):
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    start = time.perf_counter()
    code = main(["tune-kernels", "--model", "squeezenet", "--image-size", "32", "--db",
                 str(tmp_path / "db"), "--trials", "1", "--timeout", "5",
                 "--rpc-tracker", f"127.0.0.1:{port}", "--rpc-key", "k"])
    assert code == 2
    assert f"RPC tracker 127.0.0.1:{port} is unreachable" in capsys.readouterr().err
    assert time.perf_counter() - start < 60


def test_auto_kernels_take_one_this_cpu_runs_else_warn_and_build_untuned(tmp_path,
                                                                        monkeypatch, caplog):
    from tvm_ios.tuning import kernel_db

    arm = tmp_path / "llvm-cortex-a72-2c" / "squeezenet-32"
    kernel_db.KernelDB(arm, {"kind": "llvm", "mtriple": "aarch64-linux-gnu",
                             "mcpu": "cortex-a72", "num-cores": 2}, create=True)
    monkeypatch.setattr(kernel_db, "default_kernels_dir",
                        lambda m, s, t=None, root=None: tmp_path / "llvm-here-2c" / f"{m}-{s}")

    class Args:
        kernels, model, image_size = "auto", "squeezenet", 32
    assert tune_kernels.kernels_of(Args) is None  # only one this CPU cannot run
    assert "cortex-a72" in caplog.text and "building untuned" in caplog.text
    older = tmp_path / "llvm-x86-64-v2-2c" / "squeezenet-32"  # sorts after the ARM one
    kernel_db.KernelDB(older, {"kind": "llvm", "mcpu": "x86-64-v2", "num-cores": 2},
                       create=True)
    found = tune_kernels.kernels_of(Args)
    assert found is not None and found.path == older


def test_retime_of_a_database_without_records_says_tune_first(tmp_path, capsys):
    code = main(["tune-kernels", "--model", "squeezenet", "--image-size", "32", "--db",
                 str(tmp_path / "db"), "--retime", "4"])
    assert code == 2
    err = capsys.readouterr().err
    assert "has no parallel kernels to retime" in err and "tune it first" in err


def test_the_scheduled_builds_are_scheduled_modules_whose_kernels_are_tasks(tmp_path):
    from tvm_ios.cli.tune_kernels import scheduled_builds
    from tvm_ios.tuning.kernel_db import KernelDB, host_target
    from tvm_ios.tuning.tasks import kernel_tasks
    from tvm_ios.passes.apply_schedule import schedule_of
    from tvm_ios.testing import dag_model

    mod = dag_model(seed=3, num_ops=6, channels=8, size=8, p=0.3)[0]
    kernels = KernelDB(tmp_path, host_target(), create=True)
    builds = scheduled_builds(mod, kernels)
    assert len(builds) == 2 and all(schedule_of(b) is not None for b in builds)
    assert schedule_of(mod) is None
    assert len(kernel_tasks(mod, kernels, "parallel", also=builds)) >= \
        len(kernel_tasks(mod, kernels, "parallel"))


def test_kernels_are_timed_cold_where_the_weights_exceed_the_last_level_cache(monkeypatch):
    import argparse

    import numpy as np

    from tvm_ios.cli.tune_kernels import _cold
    from tvm_ios.tuning import search as tuning

    monkeypatch.setattr(tuning, "last_level_cache", lambda: 32 << 20)
    small = {"w": np.zeros((1 << 20,), "float32")}  # 4 MB: stays in the cache
    large = {"w": np.zeros((16 << 20,), "float32")}  # 64 MB: read from memory each call
    plain = argparse.Namespace(cold=False, warm=False)
    assert _cold(plain, small) is False and _cold(plain, large) is True
    assert _cold(argparse.Namespace(cold=True, warm=False), small) is True
    assert _cold(argparse.Namespace(cold=False, warm=True), large) is False


def test_layout_is_kept_in_the_database_and_a_bad_one_is_refused(tmp_path, capsys):
    from tvm_ios.tuning.kernel_db import KernelDB

    db = tmp_path / "db"
    code = main(["tune-kernels", "--model", "squeezenet", "--image-size", "32", "--db",
                 str(db), "--layout", "NHWC", "--trials", "1"])
    assert code == 2 and "unknown layout 'NHWC'" in capsys.readouterr().err
    kernels = KernelDB(db)
    assert kernels.layout == "NCHW"  # nothing recorded for the refused layout
    tune_kernels._set_layout(kernels, "NCHW16c")
    assert KernelDB(db).layout == "NCHW16c" and KernelDB(db).block == 16
    kernels.num_records = lambda variant: 3  # (as if it held records)
    try:
        tune_kernels._set_layout(kernels, "NCHW8c")
    except ValueError as err:
        assert "tuned in layout NCHW16c, not NCHW8c" in str(err)
    else:
        raise AssertionError("a database with records took another layout")


def test_a_kernel_pattern_that_matches_none_is_an_error_naming_the_kernels(tmp_path, capsys):
    code = main(["tune-kernels", "--model", "squeezenet", "--image-size", "32", "--db",
                 str(tmp_path / "db"), "--variants", "parallel", "--sequential-only",
                 "--kernel", "nothing_*", "--trials", "1"])
    assert code == 2
    err = capsys.readouterr().err
    assert "no kernel matches nothing_*" in err and "fused_conv2d" in err
