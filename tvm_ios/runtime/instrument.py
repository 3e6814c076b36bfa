"""Every call a Relax VM makes, timed as the model runs: its kernels in their order.

TVM 0.27 has no VM profiler; the VM's instrument hook (``vm.set_instrument``) is called
before and after each call the VM makes (kernels and builtins alike). :class:`CallClock`
stamps the clock there: per call name, seconds and calls of a run, and with ``ordered``
the calls one by one. :class:`TracedRun` runs one executable on fixed inputs, plainly (as a
user calls it) or traced; the whole-model judge and the in-situ profiles build on both.
"""
from __future__ import annotations

import time

from .. import _tvm

__all__ = ["CallClock", "TracedRun", "compiled_kernels"]


class CallClock:
    """The VM instrument: per call name, seconds and calls of the current run; with
    ``ordered``, also ``trace``, each call's ``(name, seconds)`` in the order it ran."""

    def __init__(self, ordered: bool = False):
        self.seconds: dict = {}
        self.calls: dict = {}
        self.trace: list | None = [] if ordered else None
        self._start = 0.0

    def __call__(self, func, name, before_run, ret_value, *args):
        now = time.perf_counter()
        if before_run:
            self._start = now
        else:
            spent = now - self._start
            self.seconds[name] = self.seconds.get(name, 0.0) + spent
            self.calls[name] = self.calls.get(name, 0) + 1
            if self.trace is not None:
                self.trace.append((str(name), spent))
        return 0  # run the call (VMInstrumentReturnKind.kNoOp)

    def clear(self) -> None:
        """Forget the current run."""
        self.seconds.clear()
        self.calls.clear()
        if self.trace is not None:
            self.trace.clear()


def compiled_kernels(mod) -> dict:
    """``name -> PrimFunc`` of the kernels of a compiled Relax module (the names the VM's
    instrument sees)."""
    return {gv.name_hint: f for gv, f in mod.functions.items()
            if isinstance(f, _tvm.tirx.PrimFunc)}


class TracedRun:
    """One executable of a model, called on fixed inputs, plainly or traced.

    Parameters
    ----------
    executable : relax executable
        The compiled model.
    inputs : list of numpy arrays
        Its inputs, copied to the device once.
    stages : dict, optional
        ``rProgram kernel name -> the ops it runs``, kept as ``stages`` for who prices the
        calls of a trace by stage.
    func_name : str
        The function called.
    """

    def __init__(self, executable, inputs: list, stages: dict | None = None,
                 func_name: str = "main"):
        self.device = _tvm.cpu()
        self.vm = _tvm.virtual_machine(executable, self.device)
        self.vm.set_input(func_name, *[_tvm.tensor(x, self.device) for x in inputs])
        self.stages = dict(stages or {})
        self.func_name = func_name

    def __call__(self) -> None:
        """Run the model once and wait for it."""
        self.vm.invoke_stateful(self.func_name)
        self.device.sync()

    def trace(self) -> list[tuple[str, float]]:
        """One run with every call timed: ``(name, seconds)`` of its calls (kernels and
        builtins) in the order they ran."""
        clock = CallClock(ordered=True)
        _tvm.set_vm_instrument(self.vm, clock)
        try:
            self()
        finally:
            _tvm.set_vm_instrument(self.vm, None)
        return list(clock.trace)
