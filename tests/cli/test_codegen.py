"""``tvm-ios codegen``: kernel sources, plans and a summary written without a GPU; with
``--simulate`` every program run under Oclgrind and compared with the llvm build."""
import json

import pytest

from tvm_ios.cli.codegen import TOLERANCE, codegen, write_codegen
from tvm_ios.cli.main import build_parser
from tvm_ios.cost.analytical import AnalyticalCostModel
from tvm_ios.kernels.rprogram import RProgram
from tvm_ios.testing import dag_model


def test_codegen_writes_sources_plans_and_summary(tmp_path):
    mod, params = dag_model(3, num_ops=8, channels=16, size=14, p=0.35)
    summary = write_codegen(mod, params, "dag", "nvidia/nvidia-h100", "ios", tmp_path,
                            AnalyticalCostModel("h100"))
    assert summary["gpu_latency"] == "not measured" and summary["rprograms"]
    for row in summary["rprograms"]:
        source = (tmp_path / f"{row['name']}.cu").read_text()
        assert "__global__" in source and "st_release_gpu" in source
        plan = RProgram.from_json((tmp_path / f"{row['name']}.rprogram.json").read_text())
        assert plan.num_veus == row["veus"] and plan.num_tasks == row["rtasks"]
        assert row["workspace_words"] == plan.num_veus + 5 and row["wait_bound"] > 0
    assert json.loads((tmp_path / "summary.json").read_text()) == summary


def test_codegen_for_an_opencl_target_writes_opencl(tmp_path):
    mod, params = dag_model(3, num_ops=4, channels=8, size=8, p=0.35)
    summary = write_codegen(mod, params, "dag", "opencl", "wavefront", tmp_path)
    (row,) = summary["rprograms"]
    assert row["vdevice"] == "opencl" and row["threads_per_veu"] <= 256
    assert "__kernel void" in (tmp_path / f"{row['name']}.cl").read_text()


def test_codegen_simulates_every_program(oclgrind, tmp_path):
    mod, params = dag_model(3, num_ops=5, channels=8, size=8, p=0.35)
    summary = write_codegen(mod, params, "dag", "nvidia/nvidia-h100", "ios", None,
                            AnalyticalCostModel("h100"), simulate=True)
    assert summary["programs"] == summary["simulated"] == len(summary["rprograms"]) >= 1
    assert summary["max_abs_diff"] < TOLERANCE and summary["steps_zero"]
    assert set(summary["errors"]) == {row["name"] for row in summary["rprograms"]}
    for counts in summary["errors"].values():
        assert {k: v for k, v in counts.items() if k != "inter_group_races"} == dict.fromkeys(
            ("local_races", "global_races", "out_of_bounds", "barrier_divergence", "other"), 0)


def test_simulation_resumes_from_its_journal(oclgrind, tmp_path, monkeypatch):
    """A second run with the same ``-o`` reuses every finished program; a corrupt journal
    line is skipped and that program simulated again."""
    mod, params = dag_model(3, num_ops=5, channels=8, size=8, p=0.35)
    args = (mod, params, "dag", "nvidia/nvidia-h100", "ios", tmp_path,
            AnalyticalCostModel("h100"))
    first = write_codegen(*args, simulate=True)
    journal = tmp_path / "simulated.jsonl"
    lines = journal.read_text().splitlines()
    assert len(lines) == first["simulated"] >= 1
    import tvm_ios.kernels.simulation.check as simulate

    def no_simulator(*_a, **_k):
        raise AssertionError("simulated again")

    monkeypatch.setattr(simulate, "simulate_program", no_simulator)
    second = write_codegen(*args, simulate=True)
    assert second["simulated"] == first["simulated"]
    assert all(row["resumed"] for row in second["simulation"])
    assert second["max_abs_diff"] == first["max_abs_diff"]
    journal.write_text("{torn\n" + "\n".join(lines[1:]) + "\n")
    with pytest.raises(AssertionError, match="simulated again"):
        write_codegen(*args, simulate=True)


def test_cli_registers_codegen_and_engine_options():
    parser = build_parser()
    args = parser.parse_args(["codegen", "--model", "m", "-o", "out"])
    assert args.target == "nvidia/nvidia-h100" and args.policy == "ios" and not args.simulate
    args = parser.parse_args(["codegen", "--model", "m", "--simulate", "--json", "f.json"])
    assert args.simulate and args.output is None and args.sim_threads is None
    args = parser.parse_args(["run", "--model", "m", "--engine", "rprogram", "--policy",
                              "wavefront"])
    assert args.engine == "rprogram" and args.policy == "wavefront"


@pytest.mark.slow
def test_cli_simulates_squeezenet(oclgrind, tmp_path, capsys):
    out = tmp_path / "sim.json"
    args = build_parser().parse_args([
        "codegen", "--model", "squeezenet", "--image-size", "64", "--target",
        "nvidia/nvidia-h100", "--simulate", "--json", str(out), "-o", str(tmp_path / "k")])
    assert codegen(args) == 0
    summary = json.loads(out.read_text())
    assert summary["programs"] == summary["simulated"] >= 8 and summary["max_abs_diff"] < 1e-3
    assert "simulated 8 of 8 programs under Oclgrind" in capsys.readouterr().out
