"""The lines of the CPU table's doc that bound what any build of a model can do here.

``ceiling_lines``: what any schedule of the tuned kernels can gain, from their records
(:mod:`tvm_ios.tuning.schedule_ceiling`). ``roofline_lines``: how far those records are from the
kernels' own rooflines, by output map (:mod:`tvm_ios.tuning.roofline`).
``memory_lines``: the least time reading the live weights takes
(:mod:`tvm_ios.bench.memory_floor`). ``compute_lines``: the least time their
convolutions and matmuls take at the rate the cores reach, and the share of that rate each
build used (:mod:`tvm_ios.bench.compute_floor`). Each reads the results JSON only
(``info.ceiling``, ``info.kernel_roofline``, ``info.memory_floor``, ``info.compute_floor``,
the rows' medians);
``baselines`` are the columns of the frameworks a user would otherwise pick.
"""
from __future__ import annotations


def ceiling_lines(name: str, ceilings: dict) -> list[str]:
    """What the kernel records allow any schedule (:mod:`tvm_ios.tuning.schedule_ceiling`)."""
    lines = []
    for t, c in ceilings.items():
        whose = ("the kernels of the graph tvm-ios schedules (dead taps cut where it has any),"
                 " in turn,"
                 if c.get("graph") == "ios" else "TVM tuned sequential's kernels")
        lines += [f"{name}, {t} threads, from the kernel records alone: {whose} "
                  f"take {c['sequential_us'] / 1e3:.2f} ms; no schedule of these "
                  f"kernels takes less than {c['bound_us'] / 1e3:.2f} ms (work "
                  f"{c['work_us'] / 1e3:.2f}, critical path {c['critical_path_us'] / 1e3:.2f}):"
                  f" the schedule can gain at most **{c['ratio']:.2f}x** ({c['untimed']} of "
                  f"{c['calls']} calls untimed, {c['no_serial']} without a one-core record).",
                  ""]
    return lines


def roofline_lines(name: str, roofline: dict, top: int = 6) -> list[str]:
    """The kernels' records against their rooflines, the ``top`` output maps of largest gap
    (:mod:`tvm_ios.tuning.roofline`)."""
    if "groups" not in roofline:
        return [f"{name}: no kernel roofline ({roofline['error']}).", ""] if roofline else []
    groups = roofline["groups"]
    lines = [f"{name}, the tuned kernels against their rooflines: each call's record (the "
             f"parallel or packed one, {roofline['threads']} threads) against the larger of its "
             f"weights read at {roofline['gbps']:.1f} GB/s and its FLOPs at "
             f"{roofline['gflops']:.1f} GFLOPS (this run's floors' best rates), by output map, "
             f"largest gap first ({len(groups)} groups; the records sum to "
             f"{sum(g['record_us'] for g in groups) / 1e3:.2f} ms, the rooflines to "
             f"{sum(g['roofline_us'] for g in groups) / 1e3:.2f}):", "",
             "| output map | calls | records, us | roofline, us | over it, us | weights, MB "
             "| GFLOP |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for g in groups[:top]:
        untimed = f" ({g['untimed']} untimed)" if g["untimed"] else ""
        lines.append(f"| {g['output']} | {g['calls']}{untimed} | {g['record_us']:.0f} | "
                     f"{g['roofline_us']:.0f} | {g['gap_us']:.0f} | {g['weight_bytes'] / 1e6:.1f}"
                     f" | {g['flops'] / 1e9:.3f} |")
    return lines + [""]


def _against(row: dict, baselines, columns) -> tuple:
    """``(best, pairs)``: the fastest baseline of ``row`` as ``(median_ms, column)`` (None
    when none ran), and it followed by those of ``columns`` that ran."""
    best = min(((row[c]["median_ms"], c) for c in baselines if "median_ms" in row.get(c, {})),
               default=None)
    return best, ([best] if best else []) + [(row[c]["median_ms"], c) for c in columns
                                             if "median_ms" in row.get(c, {})]


def memory_lines(name: str, floors: dict, rows: dict, baselines) -> list[str]:
    """The least time reading the weights takes here (:mod:`tvm_ios.bench.memory_floor`),
    against the best baseline and TVM tuned sequential of the same thread count."""
    lines = []
    for t, f in floors.items():
        if "floor_ms" not in f:
            lines += [f"{name}, {t} threads: no memory floor ({f.get('error')}).", ""]
            continue
        best, pairs = _against(rows.get(str(t), {}), baselines, ("TVM tuned sequential",))
        against = [f"{c} {ms / f['floor_ms']:.2f}x it" for ms, c in pairs]
        need = (f"; 1.5x the best baseline ({best[0] / 1.5:.2f} ms) "
                f"{'is below the floor' if best[0] / 1.5 < f['floor_ms'] else 'is above it'}"
                if best else "")
        which = ("its live weights (the taps that read only padding left out)"
                 if f.get("live_weights") else "its weights")
        lines += [f"{name}, {t} threads, the memory floor: {which}, {f['weight_mb']:.1f} "
                  f"MB, are read at least once per inference, and this machine read that much "
                  f"again and again at {f['bandwidth_gbs']:.1f} GB/s at best (median "
                  f"{f['median_gbs']:.1f}; a TVM kernel, in this run), so no build runs it in "
                  f"less than **{f['floor_ms']:.2f} ms**"
                  + (f": {', '.join(against)}" if against else "") + need + ".", ""]
    return lines


def compute_lines(name: str, floors: dict, rows: dict, baselines) -> list[str]:
    """The least time the arithmetic takes here (:mod:`tvm_ios.bench.compute_floor`), and
    the share of the cores' rate the best baseline, TVM tuned sequential and the rProgram
    used (the floor over their median)."""
    lines = []
    for t, f in floors.items():
        if "floor_ms" not in f:
            lines += [f"{name}, {t} threads: no compute floor ({f.get('error')}).", ""]
            continue
        best, pairs = _against(rows.get(str(t), {}), baselines,
                               ("TVM tuned sequential", "tvm-ios rProgram (tuned)"))
        used = [f"{c} {100 * f['floor_ms'] / ms:.0f}%" for ms, c in pairs]
        need = (f"; 1.5x the best baseline ({best[0] / 1.5:.2f} ms) would use "
                f"{150 * f['floor_ms'] / best[0]:.0f}%" if best else "")
        lines += [f"{name}, {t} threads, the compute floor: its convolutions and matmuls"
                  f"{' (dead taps cut)' if f.get('live_weights') else ''}, "
                  f"{f['gflop']:.3g} GFLOP, at the {f['peak_gflops']:.1f} GFLOPS this "
                  f"machine's cores reached at best (median {f['median_gflops']:.1f}; a TVM "
                  "multiply-add kernel on registers, in this run) take at least "
                  f"**{f['floor_ms']:.2f} ms**"
                  + (f"; of that rate, {', '.join(used)} used" if used else "") + need + ".",
                  ""]
    return lines
