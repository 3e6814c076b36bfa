"""``tvm-ios run --tune SECONDS``: a budget becomes trials added to what the cache holds; the
run then uses the kernels it tuned."""
import json
import threading

import pytest

from tvm_ios.cli.main import main
from tvm_ios.cli.run_tune import SECONDS_PER_TRIAL, trials_for


def test_a_budget_buys_trials_on_top_of_what_the_database_holds():
    assert trials_for(60, 0.5, 4, 0) == 30
    assert trials_for(60, 0.5, 4, 100) == 130  # (a rerun goes on where the last stopped)
    assert trials_for(1, None, 4, 0) == 8  # (at least 8)
    assert trials_for(40 * SECONDS_PER_TRIAL, None, 4, 0) == 10
    with pytest.raises(ValueError, match="positive number of seconds"):
        trials_for(0, 0.5, 4, 0)


@pytest.mark.slow
def test_run_tunes_into_the_cache_then_runs_with_those_kernels(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TVM_IOS_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "r.json"
    codes = []  # in a thread of its own: a TVM thread pool not sized yet, as in a new process
    worker = threading.Thread(target=lambda: codes.append(main([
        "run", "--model", "squeezenet", "--image-size", "32", "--engine", "rprogram",
        "--tune", "20", "--repeat", "1", "--json", str(out)])))
    worker.start()
    worker.join()
    assert codes == [0]
    printed = capsys.readouterr()
    err = printed.err
    # the pool sized before tuning: one sized after kept 1 worker (1 vEU, no rProgram)
    assert "sequential: 1 vEU" not in printed.out and "rProgram main" in printed.out
    assert "tuned squeezenet's kernels to" in err and str(tmp_path / "cache") in err
    (db,) = (tmp_path / "cache" / "kernels").glob("*/squeezenet-*/target.json")
    record = json.loads(out.read_text())
    assert record["tuned_kernels"]["tuned"] > 0
    assert str(db.parent) in json.dumps(record)
