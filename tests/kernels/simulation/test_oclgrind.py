"""Persistent rProgram kernels run under the Oclgrind OpenCL simulator, and faults it catches.

Each kernel here is the OpenCL rendering of a planned CUDA (sm_90a) program: correct
against TVM's llvm build, steps zero after two launches, no race inside a work-group, no
out-of-bounds access, no barrier divergence; and a dropped barrier, an out-of-bounds write,
CUDA's named-barrier shape and too few simulator threads are each reported.
"""
import numpy as np
import pytest
import tvm
from tvm import tirx

from tvm_ios import _tvm
from tvm_ios.kernels.gpu import persistent, rtask_mask
from tvm_ios.kernels.bounded_wait import BoundedWaitError
from tvm_ios.kernels.gpu.programs import build_program, plan_programs
from tvm_ios.kernels.gpu.build import build_kernels
from tvm_ios.kernels.simulation.oclgrind import parse_log, run_kernel
from tvm_ios.kernels.gpu.persistent import ZERO_THREADS
from tvm_ios.kernels.rprogram import RProgram, RTask
from tvm_ios.kernels.simulation.check import program_arrays, simulate_model, simulate_program
from tvm_ios.testing import dag_model

H100 = "nvidia/nvidia-h100"
OPENCL = _tvm.make_target("opencl")
CLEAN = {"local_races": 0, "global_races": 0, "out_of_bounds": 0, "barrier_divergence": 0,
         "other": 0}


@pytest.fixture(scope="module")
def plan():
    """A wavefront plan of a 4-op DAG on the H100 preset (4 vEUs, step waits)."""
    mod, _ = dag_model(3, num_ops=4, channels=8, size=8, p=0.35)
    return plan_programs(mod, H100, "wavefront")


def _opencl(plan, transform=None):
    (ops, program), = plan[0]
    kernel = build_program(program, ops, plan[1], plan[2], OPENCL)
    if transform is not None:  # the ops' bodies are in their device functions
        kernel.functions = {name: f.with_body(transform(f.body))
                            for name, f in kernel.functions.items()}
    return kernel, build_kernels(kernel, OPENCL).source


def _errors(row):
    return {k: v for k, v in row["errors"].items() if k != "inter_group_races"}


@pytest.mark.parametrize("policy", ["wavefront", "ios"])
def test_dag_programs_match_llvm_under_oclgrind(oclgrind, policy):
    mod, _ = dag_model(3, num_ops=6, channels=8, size=8, p=0.35)
    from tvm_ios.cost.analytical import AnalyticalCostModel
    from tvm_ios.graph.extract import extract
    from tvm_ios.schedule.ios import ios_schedule

    schedule = None if policy == "wavefront" else ios_schedule(
        extract(mod["main"]).graph, AnalyticalCostModel("h100"), strategy="parallel")
    result = simulate_model(mod, H100, policy, schedule)
    assert result["programs"] >= 1 and result["simulated"] == result["programs"]
    assert not result["failures"] and result["steps_zero"]
    assert result["max_abs_diff"] < 1e-4
    for row in result["results"]:
        assert _errors(row) == CLEAN, row["messages"]
        assert row["steps_zero"] == [True, True]


def test_waits_across_veus_are_exercised(oclgrind, plan):
    kernel, source = _opencl(plan)
    assert kernel.program.num_barriers >= 2  # vEUs really wait for each other
    row = simulate_program(kernel, source)
    assert row["max_abs_diff"] < 1e-4 and _errors(row) == CLEAN


@pytest.fixture(scope="module")
def tiny():
    """The smallest plan with step waits, for the injected faults (every race Oclgrind
    finds costs it time)."""
    mod, _ = dag_model(3, num_ops=3, channels=4, size=4, p=0.5)
    return plan_programs(mod, H100, "wavefront")


def _drop_op_barrier(body):
    """Remove the first of the ops' own ``__syncthreads`` met."""
    dropped = []

    def call(c):
        if getattr(c.op, "name", "") == "tirx.tvm_storage_sync" and not dropped:
            dropped.append(c)
            return tirx.IntImm("int32", 0)
        return c
    return _tvm.structural_map(body, (tvm.ir.expr.Call, call))


def test_a_dropped_op_barrier_is_reported_as_a_race(oclgrind, tiny):
    kernel, source = _opencl(tiny, _drop_op_barrier)
    row = simulate_program(kernel, source, launches=1)
    assert row["errors"]["local_races"] > 0, row["errors"]


def test_a_dropped_barrier_between_rtasks_is_reported_as_a_race(oclgrind, tiny, monkeypatch):
    """Without the block barrier after a compute rTask, the next rTask of the vEU reuses
    shared memory (and reads global outputs) that other threads may still be using."""
    entry = persistent._Kernel.compute_entry

    def without_barrier(self, bodies):
        stmts = list(entry(self, bodies).seq)  # [op bodies..., barrier, signal]
        return tirx.SeqStmt(stmts[:-2] + stmts[-1:])
    monkeypatch.setattr(persistent._Kernel, "compute_entry", without_barrier)
    kernel, source = _opencl(tiny)
    row = simulate_program(kernel, source, launches=1)
    assert row["errors"]["local_races"] + row["errors"]["global_races"] > 0, row["errors"]


def test_an_out_of_bounds_write_is_reported(oclgrind, tiny):
    kernel, source = _opencl(tiny)
    arrays = program_arrays(kernel)
    out = kernel.tensors[kernel.outputs[0]][0]
    arrays[out] = arrays[out].reshape(-1)[:-1].copy()  # one element short
    run = run_kernel(source, kernel.program.name, arrays, [out], kernel.program.num_veus,
                     kernel.threads, ZERO_THREADS, launches=1)
    assert run.errors["out_of_bounds"] > 0


def test_cuda_named_barrier_shape_diverges_in_opencl(oclgrind, monkeypatch):
    """An rTask on fewer threads than its vEU with its barriers inside ``if (t < n)`` (the
    named-barrier shape) is barrier divergence; the masked shape generated is clean."""
    mod, _ = dag_model(0, num_ops=3, channels=8, size=8, p=1.0)
    regions, gpu, vdevice = plan_programs(mod, H100, "wavefront")
    ops, program = regions[0]
    threads = max(gpu[op][0].threads for op in ops)
    masked = [op for op in ops if gpu[op][0].threads < threads and rtask_mask.has_barrier(
        gpu[op][0].body)]
    assert masked, "the DAG's glue and conv rTasks have different thread counts"
    kernel = build_program(program, ops, gpu, vdevice, OPENCL)
    row = simulate_program(kernel, build_kernels(kernel, OPENCL).source, launches=1)
    assert _errors(row) == CLEAN and row["max_abs_diff"] < 1e-4
    monkeypatch.setattr("tvm_ios.kernels.gpu.roperator.mask_rtask",
                        lambda body, active: tirx.IfThenElse(active, body, None))
    kernel = build_program(program, ops, gpu, vdevice, OPENCL)
    row = simulate_program(kernel, build_kernels(kernel, OPENCL).source, launches=1)
    assert row["errors"]["barrier_divergence"] > 0


def _crossed_program(plan):
    """Two independent ops on two vEUs that wait for each other in turn: vEU 0 first waits
    for vEU 1's first rTask, vEU 1 last waits for all of vEU 0. Fine with both vEUs running;
    with one simulator thread, whichever runs first waits for one that never starts."""
    regions, gpu, vdevice = plan
    (ops, _), = regions
    a, b = next((a, b) for a in ops for b in ops if a != b
                 and gpu[a][1].output not in gpu[b][1].inputs
                 and gpu[b][1].output not in gpu[a][1].inputs)
    program = RProgram(2, name="crossed")
    program.append(RTask(b, 0), 1)
    program.wait(0, [(1, 0)])
    for r in range(gpu[a][0].num_tasks):
        last = program.append(RTask(a, r), 0)
    program.wait(1, [last])
    for r in range(1, gpu[b][0].num_tasks):
        program.append(RTask(b, r), 1)
    return build_program(program, [a, b], gpu, vdevice, OPENCL)


def test_too_few_simulator_threads_end_with_the_bounded_wait_error(oclgrind, plan):
    kernel = _crossed_program(plan)
    source = build_kernels(kernel, OPENCL).source
    row = simulate_program(kernel, source, num_threads=2, launches=1)
    assert row["max_abs_diff"] < 1e-4 and _errors(row) == CLEAN
    with pytest.raises(BoundedWaitError, match=r"rProgram crossed: vEU (0|1) waited past its "
                                               r"bound \(3000 polls\) for vEU (1|0) to reach "
                                               r"step \d"):
        simulate_program(kernel, source, num_threads=1, wait_bound=3000, launches=1)


def test_parse_log_counts_races_inside_work_groups_only():
    log = """
Read-write data race at local memory address 0x1000000000004
\tKernel: k
\tFirst entity:  Global(1,0,0) Local(1,0,0) Group(0,0,0)
\tSecond entity: Global(0,0,0) Local(0,0,0) Group(0,0,0)

Read-write data race at global memory address 0x3000000000000
\tFirst entity:  Global(63,0,0) Local(31,0,0) Group(1,0,0)
\tSecond entity: Global(31,0,0) Local(31,0,0) Group(0,0,0)

Invalid write of size 4 at global memory address 0x3000000000200
\tEntity: Global(0,0,0) Local(0,0,0) Group(0,0,0)

Work-group divergence detected (barrier)
\tWork-group: (1,0,0)
\tOnly 32 out of 64 work-items executed barrier
"""
    counts, kept = parse_log(log)
    assert counts == {"local_races": 1, "global_races": 0, "inter_group_races": 1,
                      "out_of_bounds": 1, "barrier_divergence": 1, "other": 0}
    assert len(kept) == 3 and "Only 32 out of 64" in kept[-1]


def test_program_arrays_hold_weights_tables_and_zero_steps(plan):
    kernel, _ = _opencl(plan)
    arrays = program_arrays(kernel, seed=1)
    consts = [k for k in kernel.tensors if isinstance(k, tvm.ir.Constant)]
    assert consts and all(np.array_equal(arrays[kernel.tensors[k][0]], k.value.numpy())
                          for k in consts)
    assert not arrays["rp_steps"].any() and len(arrays["rp_steps"]) == kernel.workspace.words
    assert list(arrays["rp_config"]) == kernel.tables["config"]


@pytest.mark.parametrize("name,size", [
    ("squeezenet", 32),  # the fast tier's zoo model: 8 two-group fire stages
    *[pytest.param(name, size, marks=pytest.mark.slow) for name, size in (
        ("squeezenet", 64), ("inception_v3", 75), ("randwire", 32), ("nasnet_a", 32),
        ("resnext29", 32), ("resnet50", 32), ("mobilenet_v2", 32))]])
def test_zoo_programs_simulate(oclgrind, name, size):
    from tvm_ios import models
    from tvm_ios.cost.analytical import AnalyticalCostModel
    from tvm_ios.graph.extract import extract
    from tvm_ios.schedule.ios import ios_schedule

    mod, params = models.get(name, image_size=size)
    mod = _tvm.bind_params(mod, params)
    schedule = ios_schedule(extract(mod["main"]).graph, AnalyticalCostModel("h100"),
                            strategy="parallel")
    result = simulate_model(mod, H100, "ios", schedule)
    assert result["simulated"] == result["programs"], result["failures"]
    assert result["programs"] >= (8 if name == "squeezenet" else 0)
    assert result["max_abs_diff"] is None or result["max_abs_diff"] < 1e-3
    assert result["steps_zero"]
    assert all(_errors(row) == CLEAN for row in result["results"])


@pytest.fixture()
def one_rtask_an_op(monkeypatch):
    """Every op one rTask, which runs its kernel's blocks (two here) in turn."""
    monkeypatch.setattr("tvm_ios.kernels.gpu.roperator.RTASK_MAX_PER_OP", 1)
    mod, _ = dag_model(3, num_ops=4, channels=8, size=8, p=0.35)
    regions, gpu, vdevice = plan_programs(mod, H100, "wavefront")
    assert any(rop.grain > 1 and rop.smem_var is not None for rop, _ in gpu.values())
    assert all(rop.num_tasks == 1 for rop, _ in gpu.values())
    return regions, gpu, vdevice


def test_rtasks_of_several_blocks_match_llvm_under_oclgrind(oclgrind, one_rtask_an_op):
    from tvm_ios.kernels.simulation.check import simulate_regions

    result = simulate_regions(*one_rtask_an_op)
    assert result["programs"] >= 1 and result["simulated"] == result["programs"]
    assert not result["failures"] and result["max_abs_diff"] < 1e-4
    for row in result["results"]:
        assert _errors(row) == CLEAN, row["messages"]


def test_blocks_of_one_rtask_without_a_barrier_between_them_race(oclgrind, one_rtask_an_op,
                                                                 monkeypatch):
    """The next block of an rTask reuses the shared memory the last one's threads may still
    read: without the barrier between them Oclgrind reports the race."""
    from tvm_ios.kernels.gpu.roperator import GPUROperator

    task_body = GPUROperator.task_body
    monkeypatch.setattr(GPUROperator, "task_body", lambda self, *args: task_body(
        self, *args[:5], None))
    regions, gpu, vdevice = one_rtask_an_op
    ops, program = regions[0]
    kernel = build_program(program, ops, gpu, vdevice, OPENCL)
    row = simulate_program(kernel, build_kernels(kernel, OPENCL).source, launches=1)
    assert row["errors"]["local_races"] > 0, row["errors"]


def test_ops_of_one_lowered_kernel_share_a_program_and_match_llvm(oclgrind, monkeypatch):
    """Ops whose kernels are lowered once (the process's cache) run side by side in one
    program, each on its own tensors, as TVM's llvm build computes them."""
    from tvm_ios.kernels.gpu import roperator
    from tvm_ios.kernels.simulation.check import simulate_regions

    cache = roperator._LoweredKernels()
    monkeypatch.setattr(roperator, "_KERNELS", cache)
    mod, _ = dag_model(3, num_ops=6, channels=8, size=8, p=0.35)
    regions, gpu, vdevice = plan_programs(mod, H100, "wavefront")
    assert cache.hits >= 2, (cache.hits, cache.misses)
    shapes = [(rop.grid, rop.block, len(rop.params)) for op, (rop, _) in gpu.items()
              if any(op in ops for ops, _ in regions)]
    assert len(set(shapes)) < len(shapes)  # some ops of the programs share a kernel
    result = simulate_regions(regions, gpu, vdevice)
    assert result["simulated"] == result["programs"] >= 1, result["failures"]
    assert result["max_abs_diff"] < 1e-4
    for row in result["results"]:
        assert _errors(row) == CLEAN, row["messages"]
