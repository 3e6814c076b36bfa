"""Check persistent rProgram kernels by running their OpenCL rendering under Oclgrind.

For each planned rProgram of a model, :func:`simulate_program` renders the kernel for
OpenCL from the TIR its CUDA kernel is printed from (only the synchronisation differs,
:mod:`tvm_ios.kernels.gpu.sync`), runs it on random inputs (the model's own weights) twice
(the first launch after the zeroing kernel, the second on the steps the first left), and
compares every output with TVM's ``llvm`` build of each op. It reports the largest absolute
difference, whether the steps were zero after each launch, and Oclgrind's reports.
:func:`simulate_model` does it for every program of a model: the figures of ``tvm-ios
codegen --simulate``.
"""
from __future__ import annotations

import hashlib
import json
import logging
import time
from pathlib import Path

import numpy as np
import tvm

from ... import _tvm
from ..bounded_wait import BoundedWaitError, wait_message
from ..gpu.programs import build_program, plan_programs
from ..gpu.build import build_kernels
from .oclgrind import run_kernel
from ..gpu.persistent import ZERO_THREADS
from ..interpreter import in_order_slots

__all__ = ["program_arrays", "reference_outputs", "simulate_program", "simulate_regions",
           "simulate_model", "simulation_cost", "SIM_WAIT_BOUND"]

logger = logging.getLogger(__name__)

#: Polls before a simulated vEU gives up: a poll costs microseconds in the interpreter, so
#: this is minutes, beyond any legitimate wait of the small models simulated here.
SIM_WAIT_BOUND = 1 << 27


def program_arrays(kernel, seed: int = 0) -> dict:
    """Initial arrays of every kernel parameter, by name: random activations, the model's
    weights, the tables, zero outputs and steps."""
    rng = np.random.default_rng(seed)
    arrays = {}
    for key, (name, shape, dtype) in kernel.tensors.items():
        if isinstance(key, tvm.ir.Constant):
            arrays[name] = _tvm.constant_numpy(key)
        elif key in set(kernel.outputs):
            arrays[name] = np.zeros(shape, dtype)
        else:
            arrays[name] = rng.standard_normal(shape).astype(dtype)
    for name, words in kernel.tables.items():
        arrays[f"rp_{name}"] = np.asarray(words, "int32")
    arrays["rp_steps"] = np.zeros(kernel.workspace.words, "int32")
    return arrays


def reference_outputs(kernel, arrays: dict) -> dict:
    """Every output of the program computed by TVM's ``llvm`` build of each op, in
    dependency order, from the program's inputs in ``arrays``."""
    names = {key: name for key, (name, _, _) in kernel.tensors.items()}
    funcs = {f"ref_{i}": step.func.with_attr("global_symbol", f"ref_{i}")
             for i, step in enumerate(kernel.steps.values())}
    lib = _tvm.tirx.build(tvm.IRModule(funcs), target="llvm")
    made = {step.output for step in kernel.steps.values()}  # outputs and kept tensors
    values = {names[k]: arrays[names[k]] for k in names if k not in made}
    pending = list(enumerate(kernel.steps.values()))
    while pending:
        ready = [(i, s) for i, s in pending if all(names[a] in values for a in s.inputs)]
        if not ready:
            raise RuntimeError(f"rProgram {kernel.program.name}: ops read each other in a cycle")
        for i, step in ready:
            args = [_tvm.tensor(values[names[a]]) for a in step.inputs]
            out = _tvm.tensor(np.zeros(_tvm.shape_of(step.output), _tvm.dtype_of(step.output)))
            lib[f"ref_{i}"](*args, out)
            values[names[step.output]] = out.numpy()
            pending.remove((i, step))
    return {names[k]: values[names[k]] for k in kernel.outputs}


def simulate_program(kernel, source: str, *, seed: int = 0, num_threads: int | None = None,
                     wait_bound: int = SIM_WAIT_BOUND, data_races: bool = True,
                     launches: int = 2, timeout: float = 3600.0) -> dict:
    """Run the OpenCL ``source`` of ``kernel`` under Oclgrind and check it.

    Parameters
    ----------
    num_threads : int, optional
        Oclgrind's threads; default: as many vEUs as must run at once when work-groups start
        in index order (:func:`~tvm_ios.kernels.interpreter.in_order_slots`), at least 2.

    Raises
    ------
    BoundedWaitError
        A vEU waited past ``wait_bound`` polls (e.g. fewer simulator threads than vEUs).
    """
    arrays = program_arrays(kernel, seed)
    arrays["rp_config"][0] = wait_bound
    if num_threads is None:  # enough for in-order dispatch; more only spin on 2 cores
        num_threads = max(2, in_order_slots(kernel.program))
    outputs = [kernel.tensors[key][0] for key in kernel.outputs]
    program = kernel.program
    run = run_kernel(source, program.name, arrays, outputs, program.num_veus, kernel.threads,
                     ZERO_THREADS, num_threads=num_threads, launches=launches,
                     data_races=data_races, timeout=timeout)
    for steps in run.steps:
        failed = kernel.workspace.error_of(steps)
        if failed is not None:
            raise BoundedWaitError(wait_message(program.name, *failed, wait_bound))
    reference = reference_outputs(kernel, arrays)
    diff = max(float(np.abs(out[n] - reference[n]).max()) for out in run.outputs
               for n in outputs)
    return {"name": program.name, "veus": program.num_veus, "threads": kernel.threads,
            "ops": len(program.ops), "rtasks": program.num_tasks,
            "barriers": program.num_barriers, "max_abs_diff": diff,
            "max_abs_reference": max(float(np.abs(v).max()) for v in reference.values()),
            "steps_zero": [not steps[:kernel.workspace.error].any() for steps in run.steps],
            "errors": run.errors, "errors_capped": run.capped, "messages": run.messages,
            "inter_group_races_recorded": run.inter_group_recorded,
            "seconds": round(run.seconds, 2), "launch_seconds": run.launch_seconds,
            "simulator_threads": run.num_threads}


def _journal_key(source: str, seed: int, num_threads, data_races: bool) -> str:
    """What makes a simulation's row reusable: the kernel's source and how it was run."""
    text = json.dumps([source, seed, num_threads, data_races, SIM_WAIT_BOUND])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _read_journal(path) -> dict:
    """``{key: row}`` of a journal of finished simulations; a torn or corrupt line (a run
    killed while writing) is skipped with a warning naming it."""
    rows = {}
    if path is None or not Path(path).is_file():
        return rows
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        try:
            entry = json.loads(line)
            rows[entry["key"]] = entry["row"]
        except (ValueError, KeyError, TypeError):
            logger.warning("%s:%d: not a simulation record, skipped", path, number)
    return rows


def simulation_cost(program) -> int:
    """A rough cost of simulating ``program``: its entries (rTasks and barrier-rTasks)
    times the vEUs that must be resident at once (they share this machine's cores)."""
    entries = sum(len(tasks) for tasks in program.prog)
    return entries * max(1, in_order_slots(program))


def simulate_regions(regions, gpu, vdevice, *, seed: int = 0, num_threads: int | None = None,
                     data_races: bool = True, progress=None, journal=None,
                     timeout: float = 3600.0) -> dict:
    """Simulate every planned ``(ops, program)`` region (see :func:`simulate_model`).

    Programs run cheapest first (:func:`simulation_cost`), so a run cut short has checked
    as many as it could; the rows are returned in plan order. ``journal`` (a JSON-lines
    path) keeps each finished program's row as it finishes; a later run with the same
    journal reuses the row of a program whose OpenCL source and simulation options are
    unchanged (``"resumed": true``) instead of simulating it again, so a long simulation
    cut short loses only the program it was running. ``timeout`` bounds one program's
    simulation (wall seconds).
    """
    start = time.time()
    opencl = _tvm.make_target("opencl")
    rows, failures = {}, {}
    done = _read_journal(journal)
    order = sorted(range(len(regions)), key=lambda i: simulation_cost(regions[i][1]))
    for index in order:
        ops, program = regions[index]
        kernel = build_program(program, ops, gpu, vdevice, opencl, SIM_WAIT_BOUND)
        try:
            source = build_kernels(kernel, opencl, arg_checks=False).source  # the host stub is unused
            key = _journal_key(source, seed, num_threads, data_races)
            if key in done:
                rows[index] = dict(done[key], resumed=True)
            else:
                rows[index] = simulate_program(kernel, source, seed=seed, timeout=timeout,
                                               num_threads=num_threads, data_races=data_races)
                _append(journal, key, rows[index])
        except (BoundedWaitError, RuntimeError) as err:
            logger.warning("%s was not simulated: %s", program.name, err)
            failures[program.name] = str(err)[:2000]
            continue
        if progress is not None:
            progress(rows[index])
    rows = [rows[i] for i in sorted(rows)]
    return {"programs": len(regions), "simulated": len(rows),
            "max_abs_diff": max((r["max_abs_diff"] for r in rows), default=None),
            "steps_zero": all(all(r["steps_zero"]) for r in rows),
            "errors": {r["name"]: r["errors"] for r in rows}, "failures": failures,
            "seconds": round(time.time() - start, 1), "results": rows}


def _append(journal, key: str, row: dict) -> None:
    if journal is not None:
        with open(journal, "a", encoding="utf-8") as out:
            out.write(json.dumps({"key": key, "row": row}, default=float) + "\n")


def simulate_model(mod, target, policy: str = "ios", schedule=None, *, seed: int = 0,
                   num_threads: int | None = None, data_races: bool = True,
                   func_name: str = "main") -> dict:
    """Plan the model's rPrograms for ``target`` and simulate every one (see module doc).

    Returns
    -------
    dict
        ``programs`` (planned), ``simulated``, ``max_abs_diff``, ``steps_zero``, ``errors``
        (Oclgrind's counts by program), ``failures`` (programs that could not be run, with
        the reason) and one ``results`` row per program.
    """
    regions, gpu, vdevice = plan_programs(mod, target, policy, schedule, func_name)
    return simulate_regions(regions, gpu, vdevice, seed=seed, num_threads=num_threads,
                            data_races=data_races)
