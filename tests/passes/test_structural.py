"""IOSPass and RProgramPass as TVM tests its passes: a Before module in TVMScript, the pass run
with a deterministic cost model, and the Expected module in TVMScript compared with
``tvm.ir.assert_structural_equal`` (the recorded schedule is checked apart: it holds timings)."""
import pytest
import tvm
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tirx as T
from tvm.script.parser import parse

from tvm_ios.passes.apply_schedule import SCHEDULE_ATTR, schedule_of
from tvm_ios.passes.ios_pass import IOSPass
from tvm_ios.passes.rprogram_pass import RPROGRAMS_ATTR, RProgramPass, rprograms_of
from tvm_ios.testing import Concurrent, MergeFriendly


def _stages(mod):
    return [(s.strategy, s.groups) for s in schedule_of(mod).stages]


# Two 1x1 convolutions of one input with a bias and a ReLU each: IOS merges them.
@I.ir_module
class MergeBefore:
    @R.function
    def main(x: R.Tensor((1, 2, 4, 4), "float32"), w1: R.Tensor((4, 2, 1, 1), "float32"),
             b1: R.Tensor((1, 4, 1, 1), "float32"), w2: R.Tensor((6, 2, 1, 1), "float32"),
             b2: R.Tensor((1, 6, 1, 1), "float32")):
        R.func_attr({"num_input": 1})
        with R.dataflow():
            c1 = R.nn.conv2d(x, w1)
            a1 = R.add(c1, b1)
            r1 = R.nn.relu(a1)
            c2 = R.nn.conv2d(x, w2)
            a2 = R.add(c2, b2)
            r2 = R.nn.relu(a2)
            out = R.concat((r1, r2), axis=1)
            R.output(out)
        return out


# One convolution of the weights concatenated in the stage's order (4 then 6 channels), the
# biases concatenated the same way, one ReLU, and each unit's output bound to its slice.
@I.ir_module
class MergeExpected:
    @R.function
    def main(x: R.Tensor((1, 2, 4, 4), "float32"), w1: R.Tensor((4, 2, 1, 1), "float32"),
             b1: R.Tensor((1, 4, 1, 1), "float32"), w2: R.Tensor((6, 2, 1, 1), "float32"),
             b2: R.Tensor((1, 6, 1, 1), "float32")):
        R.func_attr({"num_input": 1})
        with R.dataflow():
            w = R.concat((w1, w2), axis=0)
            conv = R.nn.conv2d(x, w, out_dtype="float32")
            b = R.concat((b1, b2), axis=1)
            biased = R.add(conv, b)
            relu = R.nn.relu(biased)
            parts = R.split(relu, [4], axis=1)
            r1 = parts[0]
            r2 = parts[1]
            out = R.concat((r1, r2), axis=1)
            R.output(out)
        return out


def test_iospass_merges_two_convolutions_of_one_input():
    after = IOSPass(MergeFriendly())(MergeBefore)
    assert _stages(after) == [("merge", [["r1"], ["r2"]])]
    tvm.ir.assert_structural_equal(after.without_attr(SCHEDULE_ATTR), MergeExpected)


# r3 reads r1; r2 is independent but written last.
@I.ir_module
class ConcurrentBefore:
    @R.function
    def main(x: R.Tensor((1, 2, 4, 4), "float32"), w1: R.Tensor((2, 2, 1, 1), "float32"),
             w2: R.Tensor((2, 2, 3, 3), "float32"), w3: R.Tensor((2, 2, 1, 1), "float32")):
        R.func_attr({"num_input": 1})
        with R.dataflow():
            c1 = R.nn.conv2d(x, w1)
            r1 = R.nn.relu(c1)
            c3 = R.nn.conv2d(r1, w3)
            r3 = R.nn.relu(c3)
            c2 = R.nn.conv2d(x, w2, padding=[1, 1, 1, 1])
            r2 = R.nn.relu(c2)
            out = R.concat((r3, r2), axis=1)
            R.output(out)
        return out


# The concurrent stage {r1 | r2} comes first, so r2's bindings move before r3's.
@I.ir_module
class ConcurrentExpected:
    @R.function
    def main(x: R.Tensor((1, 2, 4, 4), "float32"), w1: R.Tensor((2, 2, 1, 1), "float32"),
             w2: R.Tensor((2, 2, 3, 3), "float32"), w3: R.Tensor((2, 2, 1, 1), "float32")):
        R.func_attr({"num_input": 1})
        with R.dataflow():
            c1 = R.nn.conv2d(x, w1)
            r1 = R.nn.relu(c1)
            c2 = R.nn.conv2d(x, w2, padding=[1, 1, 1, 1])
            r2 = R.nn.relu(c2)
            c3 = R.nn.conv2d(r1, w3)
            r3 = R.nn.relu(c3)
            out = R.concat((r3, r2), axis=1)
            R.output(out)
        return out


class Weighted:
    """r1 and r2 cost 10 us, r3 1 us; a stage costs 1 us plus its longest group, a group 5 us
    per op beyond its first: {r1 | r2} then {r3} (13 us) is the one best schedule (the
    chain {r1 r3 | r2} costs 17, {r1} then {r3 | r2} 22, one op a stage 24)."""

    WEIGHT = {"r1": 10.0, "r2": 10.0, "r3": 1.0}

    def stage_latency(self, graph, groups):
        return 1.0 + max(sum(self.WEIGHT[graph.nodes[op].name] for op in g) + 5.0 * (len(g) - 1)
                         for g in groups)

    def merged_latency(self, graph, ops):
        return None


def test_iospass_orders_bindings_by_a_concurrent_stage():
    after = IOSPass(Weighted())(ConcurrentBefore)
    assert _stages(after) == [("concurrent", [["r1"], ["r2"]]), ("concurrent", [["r3"]])]
    tvm.ir.assert_structural_equal(after.without_attr(SCHEDULE_ATTR), ConcurrentExpected)


# Two matrix products of one input: under ``Concurrent`` they are one stage of two groups.
@I.ir_module
class ProgramBefore:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), w1: R.Tensor((3, 4), "float32"),
             w2: R.Tensor((3, 5), "float32")):
        R.func_attr({"num_input": 1})
        with R.dataflow():
            m1 = R.matmul(x, w1)
            m2 = R.matmul(x, w2)
            out = R.concat((m1, m2), axis=1)
            R.output(out)
        return out


# The stage becomes one PrimFunc of 2 vEUs called with call_tir, returning both products.
# Its workspace is its own: 3 int32 steps (one per vEU and the failure flag, index 2), zeroed
# on entry; the call refuses a thread pool with fewer than 2 workers; each vEU runs its op's
# kernel (TVM's own matmul) only while no vEU has failed.
@I.ir_module
class ProgramExpected:
    @T.prim_func(private=True, s_tir=True)
    def main_ios_stage0(x: T.Buffer((T.int64(2), T.int64(3)), "float32"),
                        w1: T.Buffer((T.int64(3), T.int64(4)), "float32"),
                        w2: T.Buffer((T.int64(3), T.int64(5)), "float32"),
                        m1: T.Buffer((T.int64(2), T.int64(4)), "float32"),
                        m2: T.Buffer((T.int64(2), T.int64(5)), "float32")):
        T.func_attr({"tirx.noalias": True, "tvm_ios.rprogram": "main_ios_stage0"})
        steps = T.sblock_alloc_buffer((3,), "int32")
        assert T.call_packed("runtime.NumThreads") >= 2, ("RuntimeError", [
            "rProgram main_ios_stage0 needs 2 resident vEUs (TVM thread-pool workers); "
            "set TVM_NUM_THREADS to at least that"])
        for k in range(3):
            steps[k] = 0
        for veu in T.parallel(2):
            if veu == 0:
                T.attr(steps.data, "volatile_scope", 1)
                if steps[2] == 0:
                    with T.sblock("root"):
                        T.reads()
                        T.writes()
                        for i, j, k in T.grid(T.int64(2), T.int64(4), T.int64(3)):
                            with T.sblock("matmul"):
                                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                                T.reads(x[vi, vk], w1[vk, vj])
                                T.writes(m1[vi, vj])
                                with T.init():
                                    m1[vi, vj] = T.float32(0.0)
                                m1[vi, vj] = m1[vi, vj] + x[vi, vk] * w1[vk, vj]
            if veu == 1:
                T.attr(steps.data, "volatile_scope", 1)
                if steps[2] == 0:
                    with T.sblock("root"):
                        T.reads()
                        T.writes()
                        for i, j, k in T.grid(T.int64(2), T.int64(5), T.int64(3)):
                            with T.sblock("matmul"):
                                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                                T.reads(x[vi, vk], w2[vk, vj])
                                T.writes(m2[vi, vj])
                                with T.init():
                                    m2[vi, vj] = T.float32(0.0)
                                m2[vi, vj] = m2[vi, vj] + x[vi, vk] * w2[vk, vj]

    @R.function
    def main(x: R.Tensor((2, 3), "float32"), w1: R.Tensor((3, 4), "float32"),
             w2: R.Tensor((3, 5), "float32")) -> R.Tensor((2, 9), "float32"):
        R.func_attr({"num_input": 1})
        cls = ProgramExpected
        with R.dataflow():
            both = R.call_tir(cls.main_ios_stage0, (x, w1, w2),
                              out_ty=[R.Tensor((2, 4), "float32"), R.Tensor((2, 5), "float32")])
            m1 = both[0]
            m2 = both[1]
            out = R.concat((m1, m2), axis=1)
            R.output(out)
        return out


def _as_parsed(mod):
    """``mod`` printed and parsed back as block TVMScript (``s_tir``), as ``Expected`` is.

    TVM 0.27's TVMScript parses block PrimFuncs (root-block workspaces) only with
    ``s_tir=True``, which leaves buffer layouts unset and records ``s_tir``; the pass builds
    its PrimFunc from TVM's lowered kernels, whose parameters carry the default layout. The
    round trip makes both sides the parser's; everything the printer shows is compared."""
    text = mod.script()
    assert text.count("@T.prim_func(private=True)") == 1, text
    text = text.replace("@T.prim_func(private=True)", "@T.prim_func(private=True, s_tir=True)")
    return parse(text, extra_vars={"I": I, "R": R, "T": T})


@pytest.mark.usefixtures("two_workers")  # (tests/conftest.py)
def test_rprogram_pass_emits_one_call_tir_with_its_workspace():
    after = RProgramPass("ios", num_veus=2, cost_model=Concurrent())(ProgramBefore)
    assert _stages(after) == [("concurrent", [["m1"], ["m2"]])]
    report = rprograms_of(after)  # the module says what was built, the pass keeps nothing
    assert report.planned == 1 and [p.name for p in report.programs] == ["main_ios_stage0"]
    assert [[t.op for t in tasks] for tasks in report.programs[0].prog] == [["m1"], ["m2"]]
    after = after.without_attr(SCHEDULE_ATTR).without_attr(RPROGRAMS_ATTR)
    tvm.ir.assert_structural_equal(_as_parsed(after), ProgramExpected)
