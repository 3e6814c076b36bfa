"""``tvm-ios pipeline``: JSON fields, plot, and bad input giving exit code 2 with the reason."""
import json

from tvm_ios.cli.main import main


def test_pipeline_json_and_plot(tmp_path, capsys):
    out, plot = tmp_path / "p.json", tmp_path / "p.png"
    code = main(["pipeline", "--model", "synthnet", "--image-size", "63", "--eps", "c2",
                 "--search", "shisha,es", "--json", str(out), "--plot", str(plot)])
    assert code == 0
    data = json.loads(out.read_text())
    for key in ("throughput", "configuration", "evaluated", "space_size", "seconds"):
        assert key in data
    assert data["algorithm"] == "shisha" and len(data["results"]) == 2
    assert data["results"][0]["throughput"] <= data["results"][1]["throughput"] + 1e-9
    assert plot.stat().st_size > 0
    assert "shisha:" in capsys.readouterr().out


def test_pipeline_bad_input(capsys):
    assert main(["pipeline", "--model", "synthnet", "--eps", "c9"]) == 2
    assert "neither a preset" in capsys.readouterr().err
    assert main(["pipeline", "--model", "synthnet", "--image-size", "63", "--eps", "cpu2",
                 "--stages", "3"]) == 2
    assert "only 2 EPs" in capsys.readouterr().err
    assert main(["pipeline", "--model", "synthnet", "--eps", "c2", "--search", "ga"]) == 2
