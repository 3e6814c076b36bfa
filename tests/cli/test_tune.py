"""``tvm-ios tune``: a second run on the same log measures nothing; ``schedule --log``."""
import sys
from pathlib import Path

import pytest

from tvm_ios.cli.main import build_parser
from tvm_ios.cli.tune import StageProgress, log_cost_model, tune_module


def _tiny():
    sys.path.insert(0, str(Path(__file__).parent.parent / "cost"))
    from cost_models import inception_like  # noqa: PLC0415  (the cost tests' models)

    return inception_like(channels=8, size=8, blocks=2)[0]


def _args(*extra):
    return build_parser().parse_args(["tune", "--model", "tiny", "--number", "1", "--repeat",
                                      "2", "-r", "1", "-s", "2", *extra])


def test_second_tune_on_the_same_log_measures_nothing(tmp_path, capsys):
    mod, log = _tiny(), str(tmp_path / "log.jsonl")
    progress = StageProgress("tune tiny")
    schedule, counts, _ = tune_module(mod, "tiny", _args("--log", log), progress)
    assert counts["measured"] > 0
    progress(counts, final=True)
    assert "measured" in capsys.readouterr().err
    again, counts2, _ = tune_module(mod, "tiny", _args("--log", log))
    assert counts2["measured"] == 0 and counts2["cached"] > 0
    assert again.to_dict()["stages"] == schedule.to_dict()["stages"]
    # `tvm-ios schedule --log` prices with the logged figures, measuring nothing
    sched_args = build_parser().parse_args(["schedule", "--model", "tiny", "--log", log])
    cost = log_cost_model(sched_args, mod)
    graph = next(iter(cost.measured.extractions.values())).graph
    first = schedule.stages[0]
    groups = [[graph.index[n] for n in g] for g in first.groups]
    priced = cost.merged_latency(graph, [g[0] for g in groups]) \
        if first.strategy == "merge" else cost.stage_latency(graph, groups)
    assert priced == first.latency_us


def test_roofline_and_xgb_costs_measure_nothing(tmp_path):
    schedule, counts, _ = tune_module(_tiny(), "tiny", _args("--cost", "roofline"))
    assert counts["measured"] == 0 and counts["predicted"] > 0 and schedule.stages


def test_missing_xgb_model_file_is_named(tmp_path):
    missing = str(tmp_path / "none.json")
    with pytest.raises(FileNotFoundError, match="none.json"):
        tune_module(_tiny(), "tiny", _args("--cost", "xgb", "--xgb-model", missing))


def test_missing_tune_extra_names_the_pip_install(tmp_path, monkeypatch, capsys):
    from tvm_ios.cli.main import main

    monkeypatch.setitem(sys.modules, "cloudpickle", None)  # as if `[tune]` were not installed
    status = main(["tune", "--model", "squeezenet", "--image-size", "32", "-r", "1", "-s", "2",
                   "--log", str(tmp_path / "log.jsonl")])
    err = capsys.readouterr().err
    assert status == 2
    assert "cloudpickle is missing" in err and "pip install 'tvm-ios[tune]'" in err
    assert "Traceback" not in err


def test_cold_tune_logs_what_the_judges_read(tmp_path):
    from tvm_ios.cost.stage_judges import judge_measurer, stage_judges

    mod, log = _tiny(), str(tmp_path / "log.jsonl")
    args = build_parser().parse_args(["tune", "--model", "tiny", "-r", "1", "-s", "2",
                                      "--cold", "--number", "1", "--repeat", "1", "--log", log])
    _, counts, model = tune_module(mod, "tiny", args)
    cold = judge_measurer("llvm").device_key
    assert counts["measured"] > 0 and model.device_key == cold
    assert {r.device_key for r in model.log.records} == {cold}
    # a build that does not measure decides its concurrent stages from these figures
    together, _ = stage_judges(mod, log)
    graph = next(iter(model.extractions.values())).graph
    stages = [list(map(list, g)) for g, merge in model.candidates(
        graph, max_group_size=1, max_num_groups=2) if len(g) > 1 and not merge]
    assert stages and together.logged(graph, stages[0]) == model.logged(graph, stages[0])


def test_cold_is_refused_for_a_target_that_is_not_this_cpu(tmp_path):
    from tvm_ios.cli.tune import run

    args = build_parser().parse_args(["tune", "--model", "squeezenet", "--cold",
                                      "--target", "nvidia/nvidia-h100",
                                      "--log", str(tmp_path / "log.jsonl")])
    with pytest.raises(ValueError, match="not a CPU target"):
        run(args)
