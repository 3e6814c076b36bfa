"""Install script for tvm-ios, an inter-operator scheduling plugin for Apache TVM."""
from setuptools import find_packages, setup

setup(
    name="tvm-ios",
    version="0.1.0",
    description="Inter-operator scheduling (IOS, Rammer, GraphTurbo, pipelines) for Apache TVM Relax",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    packages=find_packages(include=["tvm_ios", "tvm_ios.*"]),
    include_package_data=True,
    install_requires=[
        "apache-tvm==0.27.*",
        # 0.1.15.x segfaults in tvm.ir.save_json (and with it pickling, meta_schedule builders).
        "apache-tvm-ffi==0.1.14.post1",
        "numpy>=1.24",
    ],
    extras_require={
        "test": ["pytest>=7", "pytest-xdist>=3", "onnx>=1.15"],
        "onnx": ["onnx>=1.15"],
        "tune": ["psutil", "cloudpickle", "tornado", "xgboost-cpu>=2.0"],
        "plot": ["matplotlib>=3.7"],
        "torch": ["torch==2.13.0"],
        # the CPU table's baselines (benchmarks/cpu_latency.py): what a user would pick
        "bench": ["torch==2.13.0", "onnx>=1.15", "onnxruntime>=1.17", "matplotlib>=3.7"],
        "dev": ["pytest>=7", "pytest-xdist>=3", "onnx>=1.15", "psutil", "cloudpickle",
                "tornado", "xgboost-cpu>=2.0", "matplotlib>=3.7", "torch==2.13.0"],
    },
    entry_points={
        "console_scripts": ["tvm-ios=tvm_ios.cli.main:main"],
        # TVM calls this on `import tvm`; it only registers the "ios" Relax pipeline lazily.
        "tvm.backends": ["tvm_ios=tvm_ios._autoload:autoload"],
    },
)
