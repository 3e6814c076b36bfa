"""Reaching devices through TVM's RPC tracker: the address, the check that it answers, and
the inputs a remote run needs.

Below the measured cost models (:mod:`tvm_ios.cost.stage_timing`) and kernel tuning
(:mod:`tvm_ios.tuning.search`), which both time on RPC servers found through a tracker
(``python -m tvm.exec.rpc_tracker`` / ``python -m tvm.exec.rpc_server --key K``).
"""
from __future__ import annotations

import socket

import numpy as np

from .. import _tvm

__all__ = ["RPCError", "parse_tracker", "check_tracker", "alloc_rpc"]


class RPCError(RuntimeError):
    """The tracker cannot be reached, does not answer, or has no server for the key."""


def parse_tracker(tracker: str, key: str | None) -> tuple[str, int, str]:
    """``(host, port, key)`` of ``--rpc-tracker HOST:PORT`` and ``--rpc-key K``.

    Raises
    ------
    ValueError
        Not ``host:port``, or no key.
    """
    host, _, port = str(tracker).rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"--rpc-tracker must be host:port, got {tracker!r}")
    if not key:
        raise ValueError("an RPC tracker needs a device key (--rpc-key)")
    return host, int(port), key


def check_tracker(host: str, port: int, key: str, timeout_s: float = 10.0):
    """Return meta_schedule's ``RPCConfig`` once the tracker answers and has a server for
    ``key``.

    Raises
    ------
    RPCError
        Within ``timeout_s``: the tracker is unreachable, does not answer, or no server
        registered with ``key``.
    """
    ms = _tvm.ms
    try:
        socket.create_connection((host, port), timeout=min(timeout_s, 5.0)).close()
    except OSError as err:
        raise RPCError(f"RPC tracker {host}:{port} is unreachable: {err}") from err
    config = ms.runner.RPCConfig(host, port, key, session_timeout_sec=int(max(1, timeout_s)))
    try:
        servers = config.count_num_servers(allow_missing=True)
    except Exception as err:  # noqa: BLE001  (tvm.rpc raises several types)
        raise RPCError(f"RPC tracker {host}:{port} did not answer: {err}") from err
    if servers == 0:
        raise RPCError(f"RPC tracker {host}:{port} has no server with key {key!r}")
    return config


def alloc_rpc(session, device, args_info, alloc_repeat: int) -> list:
    """RPCRunner ``f_alloc_argument``: random inputs copied to the remote device.

    The default needs ``tvm.contrib.random`` on the server, which a runtime-only server
    (``python -m tvm.exec.rpc_server``) may lack.
    """
    del session
    rng = np.random.default_rng(0)
    return [[_tvm.tensor(rng.standard_normal(shape).astype(dtype), device)
             for _, dtype, shape in args_info] for _ in range(alloc_repeat)]
