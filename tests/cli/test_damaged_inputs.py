"""Damaged inputs (issue 61): a schedule file cut short or with bytes flipped, a compiled
library cut short or with bytes flipped are each one line naming the file, exit 2, no
traceback; a corrupt line of a kernel database is skipped, named with its file and line,
and the run goes on (exit 0). (Damaged ONNX files: tests/cli/test_exit_codes.py.)"""
import pytest

from tvm_ios.cli.main import main
from tvm_ios.testing.faults import corrupt_kernel_db, flipped, tiny_onnx, truncated

pytest.importorskip("onnx")


def _one_line(err: str, *words: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("tvm-ios ")]
    assert "Traceback" not in err and len(lines) == 1, err
    assert all(word in lines[0] for word in words), lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The tiny model, its schedule and its compiled library."""
    where = tmp_path_factory.mktemp("built")
    model = tiny_onnx(where / "t.onnx")
    assert main(["schedule", "--model", str(model), "-o", str(where / "s.json")]) == 0
    assert main(["compile", "--model", str(model), "-o", str(where / "t.so")]) == 0
    return model, where / "s.json", where / "t.so"


DAMAGE = {"truncated": truncated, "flipped": flipped}


@pytest.mark.parametrize("damage", DAMAGE)
@pytest.mark.parametrize("option", ["--schedule", "--lib"])
def test_a_damaged_schedule_file_or_library_is_one_line_exit_2(built, option, damage,
                                                              tmp_path, capsys):
    model, schedule, lib = built
    source = schedule if option == "--schedule" else lib
    bad = tmp_path / f"{damage}{source.suffix}"
    bad.write_bytes(DAMAGE[damage](source.read_bytes()))
    # (a library cut short: the loader would map pages past its end, SIGBUS, no line at all)
    assert main(["run", "--model", str(model), "--repeat", "1", option, str(bad)]) == 2
    _one_line(capsys.readouterr().err, "run: error", str(bad))


def test_a_corrupt_kernel_database_line_is_skipped_by_name_and_the_run_goes_on(
        built, tmp_path, capsys, caplog):
    model = built[0]
    records = corrupt_kernel_db(tmp_path / "db")
    assert main(["run", "--model", str(model), "--repeat", "1", "--kernels",
                 str(tmp_path / "db")]) == 0
    assert f"kernel database {records}: skipped corrupt line(s) 1" in caplog.text
    assert "max |diff|" in capsys.readouterr().out
