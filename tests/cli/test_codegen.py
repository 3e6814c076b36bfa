"""``tvm-ios codegen``: CUDA sources, plans and a summary written without a GPU."""
import json

from tvm_ios.cli.codegen import write_codegen
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
        assert "__global__" in source and "st.release.gpu" in source
        plan = RProgram.from_json((tmp_path / f"{row['name']}.rprogram.json").read_text())
        assert plan.num_veus == row["veus"] and plan.num_tasks == row["rtasks"]
    assert json.loads((tmp_path / "summary.json").read_text()) == summary


def test_cli_registers_codegen_and_engine_options():
    parser = build_parser()
    args = parser.parse_args(["codegen", "--model", "m", "-o", "out"])
    assert args.target == "nvidia/nvidia-h100" and args.policy == "ios"
    args = parser.parse_args(["run", "--model", "m", "--engine", "rprogram", "--policy",
                              "wavefront"])
    assert args.engine == "rprogram" and args.policy == "wavefront"
