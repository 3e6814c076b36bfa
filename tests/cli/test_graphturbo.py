"""The ``graphturbo`` CLI: report, JSON figures, LB plot and verification."""
import json

from tvm_ios.cli import graphturbo


def test_report_json_and_plot(tmp_path, capsys):
    out, png = tmp_path / "gt.json", tmp_path / "lb.png"
    code = graphturbo.main(["--model", "squeezenet", "--hw", "dsa", "--image-size", "64",
                            "--json", str(out), "--plot", str(png), "--verify"])
    assert code == 0
    text = capsys.readouterr().out
    assert "tensors in DRAM" in text and "verify (llvm, instances): max abs diff" in text
    data = json.loads(out.read_text())
    figures = data["plan"]["figures"]
    assert figures["per_layer"]["dram"] == figures["layers"]
    assert data["verify"]["max_abs_diff"] < 1e-4
    assert png.stat().st_size > 1000


def test_subcommand_registers():
    import argparse

    parser = argparse.ArgumentParser()
    graphturbo.add_parser(parser.add_subparsers())
    args = parser.parse_args(["graphturbo", "--model", "resnet50", "--hw", "h100"])
    assert args.handler is graphturbo.run and args.hw == "h100"


def test_listed_in_the_tvm_ios_commands():
    from tvm_ios.cli.main import COMMANDS, build_parser

    assert "graphturbo" in COMMANDS
    args = build_parser().parse_args(["graphturbo", "--model", "mobilenet_v2"])
    assert args.hw is None and args.order == "auto" and args.engine == "instances"


def test_rprogram_engine_prints_programs_and_traffic(tmp_path, capsys):
    out = tmp_path / "gt.json"
    code = graphturbo.main(["--model", "squeezenet", "--image-size", "32", "--engine",
                            "rprogram", "--verify", "--json", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    assert "rPrograms (llvm" in text and "instances as rTasks" in text
    assert "verify (llvm, rprogram): max abs diff" in text
    data = json.loads(out.read_text())
    assert data["hw"] == "cpu" and data["verify"]["max_abs_diff"] < 1e-4
    traffic = data["rprogram"]["traffic"]
    assert traffic["rtasks"]["bytes"] < traffic["original"]["bytes"]
    assert data["rprogram"]["programs"][0]["kept_ops"] > 0
