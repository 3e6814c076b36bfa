"""Install script for tvm-ios, an inter-operator scheduling plugin for Apache TVM."""
from setuptools import find_packages, setup

#: Measuring stages (meta_schedule's process pools, RPC) and the XGBoost cost model.
#: pandas: meta_schedule prints its tuning table through it inside Jupyter (tutorial 02).
TUNE = ["psutil", "cloudpickle", "tornado", "xgboost-cpu>=2.0", "scipy>=1.10", "pandas"]
PLOT = ["matplotlib>=3.7"]
ONNX = ["onnx>=1.15"]
TORCH = "torch==2.13.0"
#: tests/test_tutorials.py runs the notebooks in a Jupyter kernel.
NOTEBOOKS = ["nbclient>=0.10", "nbformat>=5.9", "ipykernel>=6.29"]
#: The persistent-kernel tests run the OpenCL kernels under the Oclgrind simulator (apt oclgrind).
OPENCL = ["pyopencl>=2024.1"]
#: The model whose kernel databases ship in the wheel (benchmarks/kernels/*/SEED).
SEED = "inception_v3-75"
TEST = ["pytest>=7", "pytest-xdist>=3"] + ONNX + TUNE + PLOT + NOTEBOOKS + OPENCL

setup(
    name="tvm-ios",
    version="0.1.0",
    description="Inter-operator scheduling (IOS, Rammer, GraphTurbo, pipelines) for Apache TVM Relax",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    packages=find_packages(include=["tvm_ios", "tvm_ios.*"]) + ["tvm_ios.seeds"],
    # The seeds a wheel ships: the pruned kernel databases of the embedded default (Inception
    # V3, 75 px) for each CPU it was tuned on (tvm_ios.tuning.cache.seed_roots).
    package_dir={"tvm_ios.seeds": "benchmarks/kernels"},
    package_data={"tvm_ios.seeds": [f"*/{SEED}/{files}" for files in
                                    ("target.json", "*.xz", "*/*.xz")]},
    include_package_data=True,
    install_requires=[
        "apache-tvm==0.27.*",
        # 0.1.15.x segfaults in tvm.ir.save_json (and with it pickling, meta_schedule builders).
        "apache-tvm-ffi==0.1.14.post1",
        "numpy>=1.24",
    ],
    extras_require={
        # The test install: everything the fast suite imports, and no PyTorch (on a fresh
        # Linux machine an unpinned or PyPI torch is the CUDA build, gigabytes). The torch
        # tier adds [torch]: pip install -e ".[test,torch]".
        "test": TEST,
        "dev": TEST,
        "onnx": ONNX,
        "tune": TUNE,
        "plot": PLOT,
        # Pinned: never let pip resolve an unpinned torch. For a CPU-only machine install
        # the CPU build of this version (the "+cpu" wheel) first.
        "torch": [TORCH],
        # What the benchmarks need: the baselines a user would otherwise pick (the CPU
        # table's PyTorch and ONNX Runtime, benchmarks/cpu_latency.py).
        "bench": TUNE + PLOT + ONNX + ["onnxruntime>=1.17", TORCH],
    },
    entry_points={
        "console_scripts": ["tvm-ios=tvm_ios.cli.main:main"],
        # TVM calls this on `import tvm`; it only registers the "ios*" Relax pipelines lazily.
        "tvm.backends": ["tvm_ios=tvm_ios._autoload:autoload"],
    },
)
