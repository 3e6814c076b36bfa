"""Bounded waits: a vEU that waits too long gives up, and the host says who waited for what.

Every rProgram backend (the CPU vDevice, the persistent GPU kernel) polls a step with a
bound. Past it the vEU records ``(waiting vEU, awaited vEU, step)`` and leaves, vEUs that
see the record leave too, and the host raises :class:`BoundedWaitError` naming the
program, the vEU and the step. A wait can never be met when the vEU it waits for is not
running: a GPU that cannot keep every vEU resident, an OpenCL simulator or thread pool with
fewer threads than vEUs, or a malformed program.
"""
from __future__ import annotations

from .. import _tvm

__all__ = ["BoundedWaitError", "DEFAULT_WAIT_BOUND", "wait_message"]

#: Polls of one awaited step before a vEU gives up (several seconds on a GPU with 64 ns
#: back-off, or on a CPU with ``pause``; far beyond any kernel's legitimate wait).
DEFAULT_WAIT_BOUND = 1 << 26


@_tvm.register_error
class BoundedWaitError(RuntimeError):
    """A vEU of an rProgram waited past its bound for a step that never came."""


def wait_message(program: str, waiter: int, awaited: int, step: int,
                 bound: int | None = None) -> str:
    """The error text: the program, the waiting vEU, the vEU and step it waited for."""
    polls = f" ({bound} polls)" if bound is not None else ""
    return (f"rProgram {program}: vEU {waiter} waited past its bound{polls} for vEU "
            f"{awaited} to reach step {step}; the program was abandoned (are all its vEUs "
            "running at once? a GPU must keep every vEU resident, a simulator or thread "
            "pool needs a thread per vEU)")
