"""The op spec of a random CNN and its shape rules (plain data, no TVM).

A spec is ``{"seed", "size", "channels", "ops"}``; each op is a dict with ``"op"`` (its
kind, :data:`KINDS`), ``"in"`` (the refs it reads: ``-1`` is the input, ``i >= 0`` the
output of op ``i``, always an earlier op) and the attributes the generator drew. The
attributes are wishes: :func:`resolve` turns them into the attributes that fit the shapes
the op actually reads (a kernel larger than its input gets padding, groups that do not
divide the channels fall back to fewer, a residual add of two shapes becomes its first
input), so *every* sub-list of a spec still builds. That is what makes shrinking easy:
:func:`drop_ops` deletes ops and re-wires their readers to the deleted op's first input.
"""
from __future__ import annotations

__all__ = ["KINDS", "resolve", "infer_shapes", "drop_ops", "sinks"]

#: Every op kind a spec may hold.
KINDS = ("conv", "sepconv", "maxpool", "avgpool", "gap", "concat", "add", "gate", "clip",
         "relu")


def _out(n: int, k: int, stride: int, dilation: int, lo: int, hi: int) -> int:
    return (n + lo + hi - dilation * (k - 1) - 1) // stride + 1


def _fit_padding(h: int, w: int, kernel, stride: int, dilation: int, padding):
    """Padding that leaves an output of at least 1x1 (the wish kept where it does)."""
    (kh, kw), (t, l, b, r) = kernel, padding
    if _out(h, kh, stride, dilation, t, b) < 1:
        t = dilation * (kh - 1) // 2
        b = dilation * (kh - 1) - t
    if _out(w, kw, stride, dilation, l, r) < 1:
        l = dilation * (kw - 1) // 2
        r = dilation * (kw - 1) - l
    return (t, l, b, r)


def _groups(mode: str, cin: int, cout: int):
    """(groups, out channels) for a grouping wish: 1, "group" or "dw"."""
    if mode == "dw":
        return cin, cin * (2 if cout > cin else 1)
    if mode == "group":
        for g in (4, 2):
            if cin % g == 0 and cin > g:
                return g, max(g, cout // g * g)
    return 1, cout


def _conv(op: dict, shape):
    c, h, w = shape
    kernel = tuple(op["kernel"])
    stride, dilation = op["stride"], op["dilation"]
    if dilation > 1 and (max(kernel) - 1) * dilation + 1 > max(h, w):
        dilation = 1
    padding = _fit_padding(h, w, kernel, stride, dilation, tuple(op["padding"]))
    groups, cout = _groups(op.get("groups", "1"), c, op["out"])
    out = (cout, _out(h, kernel[0], stride, dilation, padding[0], padding[2]),
           _out(w, kernel[1], stride, dilation, padding[1], padding[3]))
    return {"kernel": kernel, "stride": stride, "dilation": dilation, "padding": padding,
            "groups": groups, "out": cout}, out


def _pool(op: dict, shape):
    c, h, w = shape
    k, stride = op["kernel"], op["stride"]
    pad = min(op["padding"], k // 2)
    if min(h, w) + 2 * pad < k:
        k = max(1, min(h, w) + 2 * pad)
    out = (c, _out(h, k, stride, 1, pad, pad), _out(w, k, stride, 1, pad, pad))
    return {"kernel": k, "stride": stride, "padding": pad}, out


def resolve(op: dict, shapes: list):
    """The attributes ``op`` gets on the input ``shapes`` (CHW each) and its output shape.

    Returns ``(attrs, shape, inputs)``: ``inputs`` the positions of ``op["in"]`` it reads
    (a concat drops the inputs of other spatial sizes); an op that cannot apply returns
    ``({"alias": True}, shapes[0], [0])``, i.e. it passes its first input through.
    """
    kind, first = op["op"], shapes[0]
    if kind == "conv":
        attrs, out = _conv(op, first)
        return attrs, out, [0]
    if kind == "sepconv":
        dw, mid = _conv({**op, "groups": "dw", "out": first[0]}, first)
        pw = {"kernel": (1, 1), "stride": 1, "dilation": 1, "padding": (0, 0, 0, 0),
              "groups": 1, "out": op["out"]}
        return {"dw": dw, "pw": pw}, (op["out"], mid[1], mid[2]), [0]
    if kind in ("maxpool", "avgpool"):
        attrs, out = _pool(op, first)
        return attrs, out, [0]
    if kind == "gap":
        return {}, (first[0], 1, 1), [0]
    if kind == "concat":
        keep = [i for i, s in enumerate(shapes) if s[1:] == first[1:]]
        if len(keep) < 2:
            return {"alias": True}, first, [0]
        return {}, (sum(shapes[i][0] for i in keep), first[1], first[2]), keep
    if kind == "add":
        if len(shapes) < 2 or shapes[1] != first:
            return {"alias": True}, first, [0]
        return {}, first, [0, 1]
    return {}, first, [0]  # gate, clip, relu: elementwise


def infer_shapes(spec: dict) -> list:
    """Output shape (CHW) of every op of ``spec``, in order."""
    shapes: list = []
    inp = (spec["channels"], spec["size"], spec["size"])
    for op in spec["ops"]:
        ins = [inp if r < 0 else shapes[r] for r in op["in"]]
        shapes.append(resolve(op, ins)[1])
    return shapes


def sinks(spec: dict) -> list[int]:
    """Indices of the ops no other op reads (the model's outputs)."""
    read = {r for op in spec["ops"] for r in op["in"]}
    return [i for i in range(len(spec["ops"])) if i not in read]


def drop_ops(spec: dict, drop) -> dict:
    """A copy of ``spec`` without the ops in ``drop``; readers of a dropped op read its
    first input instead (recursively), and refs are renumbered."""
    drop = set(drop)
    new_index: dict[int, int] = {}
    ops: list = []

    def remap(ref: int) -> int:
        while ref >= 0 and ref in drop:
            ref = spec["ops"][ref]["in"][0]
        return -1 if ref < 0 else new_index[ref]

    for i, op in enumerate(spec["ops"]):
        if i in drop:
            continue
        new_index[i] = len(ops)
        ins = [remap(r) for r in op["in"]]
        ops.append({**op, "in": ins})
    return {**spec, "ops": ops}
