"""Exit codes of the commands (issue 61): 1 outputs differ beyond ``--tolerance``, 2 bad input
(one line, no traceback), 3 internal error (one line; ``-v`` the traceback); fallbacks in the
JSON and ``--strict``; online pipelines only on places this machine has."""
import inspect
import json

import numpy as np
import pytest

from tvm_ios import _tvm, models
from tvm_ios.cli import run as run_cli
from tvm_ios.cli.errors import OutputsDiffer, check_outputs
from tvm_ios.cli.main import build_parser, main
from tvm_ios.tuning.kernel_db import KernelDB
from tvm_ios.pipelining.eps import check_places, parse_eps
from tvm_ios.relax_pipeline import pipeline
from tvm_ios.runtime.compare import Comparison
from tvm_ios.testing.faults import flipped, onnx_with_op

SMALL = ["--model", "squeezenet", "--image-size", "17"]
RUN = ["run", *SMALL, "--repeat", "1"]


def _one_line(err: str, *words: str) -> str:
    """The one ``tvm-ios ...`` line of ``err`` (none other, no traceback), holding ``words``."""
    lines = [line for line in err.splitlines() if line.startswith("tvm-ios ")]
    assert "Traceback" not in err and len(lines) == 1, err
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def _wrong_rewrite(monkeypatch):
    """A planted bug: the rewrite is built on the weights with one of them scaled by 1.5."""
    real = run_cli.make_pipeline

    class Wrong:
        def __init__(self, pipe):
            self.pipe = pipe

        def rewrite(self, _mod, target):
            mod, params = models.get("squeezenet", image_size=17)
            key = next(iter(params))
            return self.pipe.rewrite(_tvm.bind_params(mod, {**params, key: params[key] * 1.5}),
                                     target)

    monkeypatch.setattr(run_cli, "make_pipeline", lambda *a, **k: Wrong(real(*a, **k)))


def test_outputs_that_differ_exit_1_after_the_figures(tmp_path, monkeypatch, capsys):
    _wrong_rewrite(monkeypatch)
    out = tmp_path / "r.json"
    assert main([*RUN, "--json", str(out)]) == 1
    captured = capsys.readouterr()
    _one_line(captured.err, "outputs differ", "output 0 of 1", "--tolerance 0.001")
    assert "max |diff|" in captured.out  # nothing printed is lost
    doc = json.loads(out.read_text())       # nor the JSON
    assert doc["max_abs_diff"] > 1e-3 * doc["max_abs_value"]
    assert main([*RUN, "--tolerance", "100"]) == 0  # within a wider tolerance


def test_the_worst_output_is_named_relative_to_its_scale():
    cmp = Comparison(0.5, 100.0, None, None, output_diffs=[0.5, 0.01],
                     output_scales=[100.0, 1.0])
    with pytest.raises(OutputsDiffer, match=r"output 1 of 2 .* relative 0\.01 > "):
        check_outputs(cmp, 1e-3, "m")
    check_outputs(cmp, 0.02, "m")  # 0.5 / 100 and 0.01 / 1 are within 2%
    zero = Comparison(1e-9, 0.0, None, None, output_diffs=[1e-9], output_scales=[0.0])
    check_outputs(zero, 1e-3, "m")  # an all-zero reference: compared against eps



def test_an_op_the_frontend_lacks_is_one_line_exit_2(tmp_path, capsys):
    pytest.importorskip("onnx")
    model = onnx_with_op(tmp_path / "det.onnx")
    assert main(["run", "--model", str(model), "--repeat", "1"]) == 2
    _one_line(capsys.readouterr().err, "det.onnx", "ONNX", "Det", "not supported")


@pytest.mark.parametrize("damage", ["truncated", "flipped", "garbage", "empty", "missing"])
def test_a_damaged_model_file_is_one_line_exit_2(damage, tmp_path, capsys):
    pytest.importorskip("onnx")
    model = onnx_with_op(tmp_path / "m.onnx", op="Relu")
    data = model.read_bytes()
    if damage == "missing":
        model.unlink()
    else:
        model.write_bytes({"truncated": data[:len(data) - 40], "empty": b"",
                           "flipped": flipped(data, count=16),
                           "garbage": np.random.default_rng(0).bytes(300)}[damage])
    assert main(["schedule", "--model", str(model)]) == 2
    _one_line(capsys.readouterr().err, "m.onnx")


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"schema": "tvm-ios/schedule"'])
def test_a_schedule_file_that_does_not_parse_is_one_line_exit_2(text, tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    assert main([*RUN, "--schedule", str(bad)]) == 2
    _one_line(capsys.readouterr().err, "error")


def test_an_internal_error_is_one_line_exit_3_and_v_shows_the_traceback(monkeypatch, capsys):
    def broken(args):
        raise ZeroDivisionError("planted")

    monkeypatch.setattr(run_cli, "load_model", broken)
    assert main(RUN) == 3
    _one_line(capsys.readouterr().err, "internal error", "ZeroDivisionError: planted", "-v")
    assert main(["-v", *RUN]) == 3
    err = capsys.readouterr().err
    assert "Traceback" in err and "raise ZeroDivisionError" in err


def _stale_schedule(tmp_path) -> str:
    sched = tmp_path / "s.json"
    assert main(["schedule", *SMALL, "--scheduler", "greedy", "-o", str(sched)]) == 0
    return str(sched)


def test_a_stale_schedule_is_recorded_and_strict_refuses_it(tmp_path, capsys, caplog):
    other = ["run", "--model", "mobilenet_v2", "--image-size", "8", "--repeat", "1",
             "--schedule", _stale_schedule(tmp_path)]
    out = tmp_path / "r.json"
    assert main([*other, "--json", str(out)]) == 0
    assert "falling back to the sequential schedule" in caplog.text  # the warning stays
    fallbacks = json.loads(out.read_text())["fallbacks"]
    assert fallbacks["schedule"] == "sequential (fallback)" and "kernels" not in fallbacks
    capsys.readouterr()
    assert main([*other, "--strict"]) == 2
    _one_line(capsys.readouterr().err, "does not fit the graph", "--strict")


def test_kernels_tuned_for_another_target_are_recorded_and_strict_refuses(tmp_path, capsys,
                                                                          caplog):
    db = KernelDB(tmp_path / "db", target={"kind": "llvm", "num-cores": 64}, create=True)
    argv = [*RUN, "--kernels", str(db.path)]
    out = tmp_path / "r.json"
    assert main([*argv, "--json", str(out)]) == 0
    assert "building untuned" in caplog.text
    assert json.loads(out.read_text())["fallbacks"]["kernels"] == "untuned"
    capsys.readouterr()
    assert main([*argv, "--strict"]) == 2
    _one_line(capsys.readouterr().err, "another target", "--strict")
    ok = tmp_path / "ok.json"
    assert main([*RUN, "--kernels", "none", "--json", str(ok)]) == 0
    assert json.loads(ok.read_text())["fallbacks"] == {}


def test_places_this_machine_lacks_are_refused():
    two = [0, 1]
    check_places(parse_eps("cpu2"), "cpu2", cores=two)
    with pytest.raises(ValueError, match="needs 32 cores for its 4 CPU places"):
        check_places(parse_eps("c2"), "c2", cores=two)
    with pytest.raises(ValueError, match="pinned to cores"):
        check_places(parse_eps("cpu2"), "cpu2", cores=[0, 2])
    with pytest.raises(ValueError, match=r"slow places \(SEP\) cpu1 do not exist here"):
        check_places(parse_eps("cpu:1:FEP:20,cpu:1:SEP:20"), cores=[0, 0])


@pytest.mark.skipif(len(_tvm.usable_cores()) >= 32, reason="enough cores for preset c2")
def test_online_pipeline_on_a_preset_this_machine_lacks_is_exit_2(capsys):
    argv = ["pipeline", *SMALL, "--eps", "c2", "--times", "online", "--frames", "1"]
    assert main(argv) == 2
    _one_line(capsys.readouterr().err, "EP spec c2 needs 32 cores", "usable cores")


def test_schedule_list_names_what_model_accepts(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["schedule", "--list"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert all(f"  {name} " in out for name in models.names()) and ".onnx" in out


def test_run_defaults_to_the_engine_of_pipeline():
    default = inspect.signature(pipeline).parameters["engine"].default
    for argv in (["run", "--model", "m"], ["compile", "--model", "m", "-o", "m.so"]):
        assert build_parser().parse_args(argv).engine == default == "rprogram"
