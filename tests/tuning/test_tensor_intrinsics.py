"""TVM's tensor intrinsics, which every meta_schedule TuneContext imports, load without
inspect scanning every loaded module for each frame of the import machinery (a minute of each
tuning process, before :func:`tvm_ios._tvm.load_tensor_intrinsics`)."""
import subprocess
import sys

CHILD = r"""
import inspect, sys
from tvm_ios import _tvm
before = dict(inspect.modulesbyfile)
real = inspect.getabsfile
misses = []
def counted(obj, _filename=None):
    file = real(obj, _filename)
    if file not in inspect.modulesbyfile:  # getmodule will scan sys.modules for it
        misses.append(file)
    return file
inspect.getabsfile = counted
_tvm.load_tensor_intrinsics()
assert "tvm.s_tir.tensor_intrin" in sys.modules
left = {f: m for f, m in inspect.modulesbyfile.items() if m == "<no module>"}
print(len([f for f in misses if "<" in f]), len(left), len(set(before) - set(inspect.modulesbyfile)))
"""


def test_tensor_intrinsics_load_without_scanning_modules_per_frame():
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    scans, left, lost = map(int, out.stdout.split())
    assert scans == 0  # ~20000 scans of sys.modules (59 s) without the hint
    assert left == 0 and lost == 0  # inspect's cache as it was, less nothing
