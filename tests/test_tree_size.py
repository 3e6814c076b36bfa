"""The tree stays light enough to travel (a GPU host takes the tree and a pack in 64 MiB):
tracked files under 16 MiB in all, none over 1 MiB under ``benchmarks/`` (kernel databases
are committed pruned and xz-packed: ``scripts/prune_kernels.py``)."""
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MIB = 1 << 20


def _tracked() -> list[Path]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    return [ROOT / name for name in out.stdout.decode().split("\0") if name]


def test_tracked_files_are_under_16_mib():
    sizes = {p: p.stat().st_size for p in _tracked() if p.is_file()}
    total = sum(sizes.values())
    largest = sorted(sizes, key=sizes.get, reverse=True)[:3]
    assert total < 16 * MIB, (f"tracked files are {total / MIB:.1f} MiB; largest: "
                              + ", ".join(f"{p.relative_to(ROOT)} {sizes[p] / MIB:.1f}"
                                          for p in largest))


def test_no_tracked_file_over_1_mib_under_benchmarks():
    big = [f"{p.relative_to(ROOT)} ({p.stat().st_size / MIB:.1f} MiB)" for p in _tracked()
           if p.is_file() and p.is_relative_to(ROOT / "benchmarks") and p.stat().st_size > MIB]
    assert not big, "pack or prune these (scripts/prune_kernels.py): " + ", ".join(big)
