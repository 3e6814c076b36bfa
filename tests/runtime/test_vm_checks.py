"""relax.run.assert_op in a runtime-only process: missing without vm_checks, TVM's behaviour with it."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tvm
from tvm import relax

from tvm_ios.runtime import vm_checks


def _checked_module():
    """main(x, flag): assert_op(flag, [x[0]], "bad {}"), then x + 1."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((2,), "int32"))
    flag = relax.Var("flag", relax.TensorType((), "bool"))
    with bb.function("main", [x, flag]):
        first = bb.emit(relax.op.take(x, relax.const(0, "int64"), axis=0))
        bb.emit(relax.op.assert_op(flag, [first], "vEU waited for {}"))
        gv = bb.emit(relax.op.add(x, relax.const(1, "int32")))
        bb.emit_func_output(gv)
    return bb.get()


@pytest.fixture(scope="module")
def checked_library(tmp_path_factory):
    path = tmp_path_factory.mktemp("checks") / "checked.so"
    tvm.compile(_checked_module(), "llvm").export_library(str(path))
    return path


_RUNNER = textwrap.dedent("""
    import os, sys
    os.environ["TVM_USE_RUNTIME_LIB"] = "1"; os.environ["TVM_DEVICE_BACKEND_AUTOLOAD"] = "0"
    import numpy as np, tvm
    from tvm.runtime.vm import VirtualMachine
    if sys.argv[2] == "register":
        from tvm_ios.runtime import vm_checks
        assert vm_checks.register()
    assert "tvm.relax" not in sys.modules
    vm = VirtualMachine(tvm.runtime.load_module(sys.argv[1]), tvm.cpu())
    x = tvm.runtime.tensor(np.array([7, 8], "int32"))
    ok = vm["main"](x, tvm.runtime.tensor(np.array(True)))
    print("ok", ok.numpy().tolist())
    try:
        vm["main"](x, tvm.runtime.tensor(np.array(False)))
    except AssertionError as err:
        print("raised", err)
""")


def _run(library, mode):
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    return subprocess.run([sys.executable, "-c", _RUNNER, str(library), mode], env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def test_runtime_only_vm_lacks_assert_op_without_registration(checked_library):
    proc = _run(checked_library, "bare")
    assert proc.returncode != 0
    assert "relax.run.assert_op" in proc.stderr


def test_registered_assert_op_passes_and_raises_like_tvm(checked_library):
    proc = _run(checked_library, "register")
    assert proc.returncode == 0, proc.stderr
    assert "ok [8, 9]" in proc.stdout
    assert "raised vEU waited for 7" in proc.stdout


def test_same_message_as_tvms_own():
    from tvm.relax.op.base import relax_assert_op  # TVM's own

    args = (tvm.runtime.tensor(np.array(False)), "vEU {} step {}", 3, 4)
    with pytest.raises(AssertionError) as ours:
        vm_checks.assert_op(*args)
    with pytest.raises(AssertionError) as theirs:
        relax_assert_op(*args)
    assert str(ours.value) == str(theirs.value) == "vEU 3 step 4"
    vm_checks.assert_op(True, "")  # a true condition does nothing
    assert not vm_checks.register()  # TVM's own is registered in this process
