"""One device function per distinct rTask kernel, called by every persistent kernel that runs it.

GraphTurbo's instances repeat a few kernels on other tensors, across programs: Inception V3
at 299 px is 425 rPrograms of 10 734 ops, but 377 distinct kernels. With each kernel's body
inside every program that runs it, the CUDA source was 224 MB (after the ops of one
program shared their bodies, :mod:`~tvm_ios.kernels.gpu.shared_bodies`). Here an rTask
kernel's body is one private PrimFunc of the module, named by the kernel, and a program
calls it:

* its parameters: a pointer per tensor in global memory, an element offset per view into
  the block's kept shared memory (GraphTurbo's LB scope; every view's accesses become the
  arena's at its offset: :func:`~tvm_ios.kernels.veu_memory.at_arena`), the arena, the
  block's shared-memory buffer, the rTask index and the thread index;
* its name: the lowered kernel's number in this process
  (:attr:`~tvm_ios.kernels.gpu.roperator.GPUROperator.kernel`), its grain, the vEU's
  threads (an rTask on fewer threads is masked) and which parameters are views. Two
  programs that run one kernel the same way make the same function, and a module keeps one.

TVM's CUDA codegen prints a private PrimFunc as a ``__device__`` function. Its OpenCL
codegen prints kernels only: :func:`inline_functions` (TVM's ``InlinePrivateFunctions``)
puts the bodies back into the programs first, which is also what Oclgrind runs.
"""
from __future__ import annotations

import logging

import tvm

from ... import _tvm
from ..tir_util import seq
from ..veu_memory import STATIC_SHARED_BYTES, at_arena

__all__ = ["DeviceFunctions", "called", "inline_functions", "module_of", "out_of_line"]

logger = logging.getLogger(__name__)
tirx = _tvm.tirx
_GLOBAL_VARS: dict = {}  # name -> GlobalVar: a call and its module share one object


def _global_var(name: str):
    gvar = _GLOBAL_VARS.get(name)
    if gvar is None:
        gvar = _GLOBAL_VARS[name] = tvm.ir.GlobalVar(name)
    return gvar


def _scope(buf) -> str:
    return str(buf.scope())


def _over_parameter(name: str, shape, dtype: str, scope: str):
    """``(parameter, buffer, declaration)``: a pointer parameter and a buffer over it."""
    data = tirx.Var(name, tvm.ir.PointerType(tvm.ir.PrimType(dtype), scope))
    buf = tirx.decl_buffer(shape, dtype, name, data=data, scope=scope)
    return data, buf, tirx.DeclBuffer(buf, data=data)


class DeviceFunctions:
    """The device functions of one program's kernel, and the calls that run them.

    Parameters
    ----------
    threads : int
        Threads of the program's vEU (an rTask on fewer is masked).
    smem_scope : str
        Scope of the block's shared-memory buffer (``shared.dyn`` on CUDA).
    barrier : Stmt
        The block barrier (between the blocks of an rTask of ``grain`` > 1).
    """

    def __init__(self, threads: int, smem_scope: str, barrier):
        self.threads, self.smem_scope, self.barrier = threads, smem_scope, barrier
        self.functions: dict = {}  # name -> PrimFunc

    def name(self, rop, buffers) -> str:
        """The function of ``rop`` over ``buffers`` (views: ``v``, global tensors: ``p``)."""
        kinds = "".join("p" if _scope(b) == "global" else "v" for b in buffers)
        return f"rtask_k{rop.kernel}_g{rop.grain}_t{self.threads}_{kinds}"

    def call(self, rop, buffers: list, arena, rtask, tid, smem):
        """The statement that runs rTask ``rtask`` of ``rop`` over ``buffers`` (views into
        ``arena`` among them) on thread ``tid``; the function is made on first use."""
        name = self.name(rop, buffers)
        if name not in self.functions:
            self.functions[name] = self._function(rop, buffers, arena)
        args = [b.data if _scope(b) == "global" else b.elem_offset for b in buffers]
        if any(_scope(b) != "global" for b in buffers):
            args.append(arena.data)
        if rop.smem_var is not None:
            args.append(smem.data)
        return tirx.Evaluate(_global_var(name)(*args, rtask, tid))

    def _function(self, rop, buffers, arena):
        """The private PrimFunc: parameters as :meth:`call` passes them."""
        params, decls, inner, views = [], [], [], []

        def pointer(name, shape, dtype, scope):
            data, buf, decl = _over_parameter(name, shape, dtype, scope)
            params.append(data)
            decls.append(decl)
            return buf
        for p, buf in enumerate(buffers):
            if _scope(buf) == "global":
                inner.append(pointer(f"t{p}", buf.shape, buf.dtype, "global"))
                continue
            offset = tirx.Var(f"t{p}_offset", buf.elem_offset.ty)
            params.append(offset)
            views.append(tirx.decl_buffer(buf.shape, buf.dtype, f"t{p}", elem_offset=offset,
                                          scope=_scope(buf)))
            inner.append(views[-1])
        kept = smem = None
        if views:
            kept = pointer("rp_kept", (STATIC_SHARED_BYTES // 4,), arena.dtype, _scope(arena))
        if rop.smem_var is not None:
            smem = pointer("rp_smem", (max(-(-rop.smem_bytes // 4), 4),), "float32",
                           self.smem_scope)
        rtask, tid = tirx.Var("rtask", "int32"), tirx.Var("tid", "int32")
        body = rop.task_body(rtask, tid, self.threads, inner, smem, self.barrier)
        return tirx.PrimFunc(params + [rtask, tid], seq(decls + [at_arena(body, views, kept)]))


#: C types TVM's CUDA codegen prints for the parameters of a device function.
_CUDA_TYPES = {"float32": "float", "float16": "half", "float64": "double", "int32": "int",
               "int64": "int64_t", "int8": "int8_t", "uint8": "uint8_t", "bool": "bool"}


def _cuda_declaration(name: str, func) -> str | None:
    """``name``'s declaration with ``__noinline__``, in the types TVM prints (None for a
    parameter type not in :data:`_CUDA_TYPES`)."""
    types = []
    for param in func.params:
        ty = param.ty
        pointer = isinstance(ty, tvm.ir.PointerType)
        ctype = _CUDA_TYPES.get(str(ty.element_type.dtype if pointer else ty.dtype))
        if ctype is None:
            return None
        types.append(ctype + ("*" if pointer else ""))
    return f'extern "C" __device__ __noinline__ void {name}({", ".join(types)});'


def out_of_line(name: str, func):
    """``func`` (the device function ``name``) declared ``__noinline__`` first in the CUDA
    source, through a helper its body calls (TVM's ``cuda.func_call`` prints the helper's
    source before the module's functions; the empty helper compiles to nothing)."""
    declaration = _cuda_declaration(name, func)
    if declaration is None:
        logger.debug("%s: a parameter type without a C name; nvcc may inline it", name)
        return func
    from tvm.backend.cuda.op import cuda_func_call  # CUDA codegen only: on demand

    helper = f"{name}_out_of_line"
    source = f"{declaration}\n__forceinline__ __device__ void {helper}() {{}}\n"
    mark = tirx.Evaluate(cuda_func_call(helper, source_code=source))
    return func.with_body(seq([mark, func.body]))


def called(func) -> set[str]:
    """Names of the device functions ``func`` calls."""
    names: set = set()

    def call(node):
        if isinstance(node.op, tvm.ir.GlobalVar):
            names.add(node.op.name_hint)
        return node
    _tvm.structural_map(func.body, (tvm.ir.expr.Call, call))
    return names


def module_of(kernels, functions=None):
    """An IRModule of the persistent kernels ``kernels`` (PrimFuncs named by
    ``global_symbol``) and the device functions they call (name -> PrimFunc; one of each
    name). A kernel that calls a function not given is a ``ValueError``."""
    functions = functions or {}
    for func in kernels:
        missing = called(func) - functions.keys()
        if missing:
            raise ValueError(f"kernel {func.attrs['global_symbol']} calls device functions "
                             f"not given ({sorted(missing)[:3]}...): build the "
                             "PersistentKernel, which has them, not its .func")
    mod = {tvm.ir.GlobalVar(f.attrs["global_symbol"]): f for f in kernels}
    for name, func in functions.items():
        mod[_global_var(name)] = func
    return tvm.IRModule(mod)


def inline_functions(mod):
    """``mod`` with every device function's body put back at its calls (TVM's
    ``InlinePrivateFunctions``): for OpenCL, whose codegen prints kernels only."""
    return tirx.transform.InlinePrivateFunctions()(mod)
