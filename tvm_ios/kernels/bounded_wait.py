"""Bounded waits: a vEU that waits too long gives up, and the host says who waited for what.

Every rProgram backend (the CPU vDevice, the persistent GPU kernel) polls a step with a
bound. Past it the vEU records ``(waiting vEU, awaited vEU, step)`` and leaves, vEUs that
see the record leave too, and the host raises :class:`BoundedWaitError` naming the
program, the vEU and the step. A wait can never be met when the vEU it waits for is not
running: a GPU that cannot keep every vEU resident, an OpenCL simulator or thread pool with
fewer threads than vEUs, or a malformed program.
"""
from __future__ import annotations

import logging
import os

from .. import _tvm

__all__ = [
    "DEFAULT_WAIT_BOUND",
    "DEFAULT_WAIT_US",
    "WAIT_US_ENV",
    "BoundedWaitError",
    "wait_message",
    "wait_us",
]

logger = logging.getLogger(__name__)

#: Polls of one awaited step before a vEU gives up (the CPU vDevice with ``pause`` and
#: OpenCL, which has no clock to read; far beyond any kernel's legitimate wait).
DEFAULT_WAIT_BOUND = 1 << 26
#: On CUDA the bound is a time: microseconds of the GPU's ``%globaltimer`` one wait may
#: last (a second: a stuck program fails fast, a legitimate wait is micro- to milliseconds).
DEFAULT_WAIT_US = 1_000_000
#: Environment variable read at build time: the CUDA wait bound in microseconds.
WAIT_US_ENV = "TVM_IOS_WAIT_US"


def wait_us() -> int:
    """The CUDA wait bound (microseconds): ``$TVM_IOS_WAIT_US`` or :data:`DEFAULT_WAIT_US`.

    Raises
    ------
    ValueError
        When the variable is not a positive integer that fits the kernel's int32 table.
    """
    text = os.environ.get(WAIT_US_ENV, "").strip()
    if not text:
        return DEFAULT_WAIT_US
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 0 < value < 2**31:
        raise ValueError(f"{WAIT_US_ENV}={text!r}: expected microseconds, a positive integer "
                         "below 2**31")
    logger.info("CUDA bounded waits: %d us (%s)", value, WAIT_US_ENV)
    return value


@_tvm.register_error
class BoundedWaitError(RuntimeError):
    """A vEU of an rProgram waited past its bound for a step that never came."""


def wait_message(program: str, waiter: int, awaited: int, step: int,
                 bound: int | None = None, unit: str = "polls") -> str:
    """The error text: the program, the waiting vEU, the vEU and step it waited for."""
    polls = f" ({bound} {unit})" if bound is not None else ""
    return (f"rProgram {program}: vEU {waiter} waited past its bound{polls} for vEU "
            f"{awaited} to reach step {step}; the program was abandoned (are all its vEUs "
            "running at once? a GPU must keep every vEU resident, a simulator or thread "
            "pool needs a thread per vEU)")
