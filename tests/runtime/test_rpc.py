"""The RPC tracker's address and the check that it answers (a live tracker and server are
exercised in tests/cost/test_measure.py)."""
import socket
import time

import pytest

from tvm_ios.runtime.rpc import RPCError, check_tracker, parse_tracker


def test_tracker_address_and_key_are_parsed():
    assert parse_tracker("10.0.0.2:9190", "rasp") == ("10.0.0.2", 9190, "rasp")
    with pytest.raises(ValueError, match="host:port"):
        parse_tracker("localhost", "k")
    with pytest.raises(ValueError, match="--rpc-key"):
        parse_tracker("127.0.0.1:9190", None)


def test_a_tracker_nobody_runs_is_named_within_the_timeout():
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    start = time.perf_counter()
    with pytest.raises(RPCError, match=f"RPC tracker 127.0.0.1:{port} is unreachable"):
        check_tracker("127.0.0.1", port, "k", timeout_s=2)
    assert time.perf_counter() - start < 10
