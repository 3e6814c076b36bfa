"""IOS's own model blocks come out optimal with the default call (full size, slow)."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from ios_blocks import ios_blocks, ios_randwire_graph, zoo_graph
from tvm_ios.cost.analytical import AnalyticalCostModel
from tvm_ios.schedule.ios import ios_schedule


@pytest.mark.slow
@pytest.mark.parametrize("model", ["randwire", "nasnet_a", "inception_v3", "squeezenet"])
def test_ios_blocks_are_searched_whole_by_default(model):
    graph = ios_randwire_graph() if model == "randwire" else zoo_graph(model)
    cost = AnalyticalCostModel("v100")
    for name, block in ios_blocks(graph):
        default = ios_schedule(block, cost)
        assert default.stats["exact"] and default.stats["blocks"] == 1, name
        whole = ios_schedule(block, cost, partition=False)
        assert default.latency_us == whole.latency_us, name
        assert default.stats["transitions"] == whole.stats["transitions"], name
