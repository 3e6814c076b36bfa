"""Which kernels are tuning tasks: those a schedule fuses otherwise than the sequential
build are tasks too, each workload once, and a scheduled build's rPrograms are not."""
import numpy as np
import tvm
from tvm import relax

from tvm_ios import pipeline
from tvm_ios.cost.stage_module import op_stages
from tvm_ios.tuning.kernel_db import KernelDB, host_target
from tvm_ios.tuning.tasks import kernel_tasks
from tvm_ios.testing import dag_model


def _two_convs(first_1x1: bool):
    """A 1x1 and a 3x3 convolution of one input, bound in either order, then their sum:
    TVM fuses the sum into one convolution or the other depending on the order."""
    rng = np.random.default_rng(0)
    w1 = relax.const(rng.standard_normal((8, 8, 1, 1)).astype("float32"))
    w3 = relax.const(rng.standard_normal((8, 8, 3, 3)).astype("float32"))
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 8, 8, 8), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            convs = [lambda: bb.emit(relax.op.nn.conv2d(x, w1)),
                     lambda: bb.emit(relax.op.nn.conv2d(x, w3, padding=(1, 1)))]
            a, b = [c() for c in (convs if first_1x1 else convs[::-1])]
            out = bb.emit_output(bb.emit(relax.op.add(a, b)))
        bb.emit_func_output(out)
    return bb.get()


def test_the_kernels_a_schedule_fuses_otherwise_are_tasks_too(tmp_path):
    kernels = KernelDB(tmp_path, host_target(), create=True)
    as_built, reordered = _two_convs(True), _two_convs(False)
    own = kernel_tasks(as_built, kernels, "parallel")
    both = kernel_tasks(as_built, kernels, "parallel", also=[reordered, as_built])
    assert len(own) == 2 and len(both) == 4  # the sum fused the other way: 2 new workloads
    assert len({t.task_name for t in both}) == 4  # (each task named once)
    assert [t.task_name for t in both[:2]] == [t.task_name for t in own]


def test_a_scheduled_build_gives_its_fused_kernels_not_its_rprograms(tmp_path):
    mod = dag_model(seed=3, num_ops=6, channels=8, size=8, p=0.3)[0]
    kernels = KernelDB(tmp_path, host_target(), create=True)
    with kernels.target:
        scheduled = pipeline(policy="wavefront", kernels=kernels).before_kernels(
            mod, kernels.target)
    rprograms = [gv.name_hint for gv, f in scheduled.functions.items()
                 if isinstance(f, tvm.tirx.PrimFunc) and f.attrs is not None
                 and "tvm_ios.rprogram" in f.attrs]
    assert rprograms
    tasks = kernel_tasks(mod, kernels, "parallel", also=[scheduled])
    assert not [t.task_name for t in tasks if "tvm_ios.rprogram" in str(t.dispatched[0])]


def test_each_op_alone_as_a_stage_measures_it_is_a_task_too(tmp_path):
    """A stage's judge runs an op alone: the convolution whose sum the model fuses into it
    is then a convolution alone, a workload the model's own tasks lack."""
    kernels = KernelDB(tmp_path, host_target(), create=True)
    mod = _two_convs(True)
    own = kernel_tasks(mod, kernels, "parallel")
    alone = op_stages(mod, kernels.target)
    both = kernel_tasks(mod, kernels, "parallel", also=alone)
    assert len(own) == 2 and len(both) == 3  # + the 3x3 convolution without the sum
    assert all(len(m["main"].params) == 1 for m in alone)  # weights bound, as measured
