"""Benchmark: IOS search time for a whole-network schedule of every zoo model (r=3, s=8).

Full published input sizes, the analytical cost model (no measurement), one process:

    python benchmarks/search_speed.py [--models inception_v3 randwire ...]

Prints per model: units, blocks, largest block (n, d), states, transitions, DP seconds, and
the estimated speedup over the sequential schedule.
"""
import argparse
import time

from tvm_ios import models
from tvm_ios.cost.analytical import AnalyticalCostModel
from tvm_ios.graph.analysis import width
from tvm_ios.graph.blocks import partition_blocks
from tvm_ios.graph.opgraph import OpGraph
from tvm_ios.schedule.baselines import sequential_schedule
from tvm_ios.schedule.ios import ios_schedule


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", default=models.names())
    args = parser.parse_args()
    cost = AnalyticalCostModel("v100")
    print(f"{'model':<14}{'units':>6}{'blocks':>7}{'n,d':>8}{'states':>9}{'transitions':>13}"
          f"{'DP s':>8}{'est. speedup':>14}")
    for name in args.models:
        mod, _ = models.get(name, calibrate=False)
        graph = OpGraph.from_relax(mod)
        blocks = partition_blocks(graph)
        big = max(blocks, key=int.bit_count)
        start = time.perf_counter()
        sched = ios_schedule(graph, cost, max_group_size=3, max_num_groups=8)
        seconds = time.perf_counter() - start
        seq = sequential_schedule(graph, cost).latency_us
        print(f"{name:<14}{len(graph):>6}{len(blocks):>7}"
              f"{f'{big.bit_count()},{width(graph, big)}':>8}{sched.stats['states']:>9}"
              f"{sched.stats['transitions']:>13}{seconds:>8.2f}"
              f"{seq / sched.latency_us:>13.2f}x", flush=True)


if __name__ == "__main__":
    main()
