"""The mapping report: tables (rich for the terminal, Markdown and HTML on disk) and PNG plots.

Contents: the primitive x placement latency table for the run's workload (with each
placement's source: measured / fpga-model / gpu-spec), the fit error of every model, the
latency of each call against its work (profile points and fitted lines), the top-10 mappings
in strict and relaxed mode, the chosen mapping, its predicted speed-up over the baselines,
and the FPGA architecture exploration of each modelled board.
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path

import numpy as np

from hrl.mapping import dse
from hrl.mapping import fpga as fpga_model
from hrl.mapping.plan import Plan
from hrl.mapping.workload import CALLS, PRIMITIVES

SOURCE_MARK = {"measured": "", "fpga-model": " (model)", "gpu-spec": " (spec model)"}


def _us(t: float) -> str:
    if t is None or not math.isfinite(t):
        return "-"
    return f"{t * 1e6:,.1f}"


def latency_rows(p: Plan) -> tuple[list[str], list[list[str]]]:
    head = ["call"] + [pl.name + SOURCE_MARK[pl.source] for pl in p.placements]
    rows = []
    lat = p.exploration.problem.latency
    counts = p.exploration.problem.counts
    for i, c in enumerate(CALLS):
        rows.append([f"{c} (x{counts[i]:g}/iter) [us]"] + [_us(v) for v in lat[i]])
    return head, rows


def model_rows(p: Plan) -> tuple[list[str], list[list[str]]]:
    head = ["call", "placement", "a [us]", "b [s/work]", "points", "work range",
            "median rel. err", "max rel. err", "leave-one-out median"]
    rows = []
    for (call, place), m in sorted(p.models.items()):
        rows.append([call, place, f"{m.intercept * 1e6:.2f}", f"{m.slope:.3g}", str(m.n_points),
                     f"{m.work_range[0]:.3g}..{m.work_range[1]:.3g}",
                     f"{m.rel_err_median:.1%}", f"{m.rel_err_max:.1%}",
                     "-" if math.isnan(m.loo_err_median) else f"{m.loo_err_median:.1%}"])
    return head, rows


def top_rows(p: Plan, mode: str, k: int = 10,
             executor: str = "auto") -> tuple[list[str], list[list[str]]]:
    e = p.exploration
    times = e.times(mode, executor)
    head = ["rank", *PRIMITIVES, "iteration [us]", "env steps/s", "SGD steps/s"]
    rows = []
    w = p.workload
    for rank, r in enumerate(e.top(mode, k, executor), 1):
        m = e.mapping(r)
        t = times[r]
        rows.append([str(rank), *[m[x] for x in PRIMITIVES], _us(t),
                     f"{w.num_envs * w.rollout_length / t:,.0f}",
                     f"{w.sgd_steps / t:,.0f}"])
    return head, rows


def baseline_rows(p: Plan, mode: str) -> tuple[list[str], list[list[str]], dict]:
    e = p.exploration
    times = e.times(mode)
    best = e.best(mode)
    head = ["baseline", "mapping", "iteration [us]", "speed-up of chosen"]
    rows, summary = [], {}
    for name, m in dse.baselines(e, p.workload).items():
        t = times[e.row_of(m)]
        s = dse.speedup(t, times[best])
        summary[name] = {"mapping": m, "seconds": t, "speedup": s}
        rows.append([name, dse.format_mapping(m), _us(t), "-" if math.isnan(s) else f"{s:.2f}x"])
    return head, rows, summary


def fpga_rows(p: Plan) -> tuple[list[str], list[list[str]]]:
    head = ["board", "K", "lanes", "depth", "fits", "LUT", "FF", "BRAM36", "URAM",
            "sample batch [us]", "largest N that fits"]
    rows = []
    w = p.workload
    for pl in p.placements:
        if pl.kind != "fpga-model":
            continue
        board = fpga_model.get_board(pl.name.split(":", 1)[1])
        for r in fpga_model.explore(w.capacity, board, w.batch_size, p.rmm_timing):
            rows.append([board.name, str(r["fanout"]), str(r["lanes"]), str(r["depth"]),
                         "yes" if r["fits"] else "no", f"{r['util_lut']:.1%}",
                         f"{r['util_ff']:.1%}", f"{r['util_bram36']:.1%}",
                         f"{r['util_uram']:.1%}", _us(r["sample_s"]),
                         f"{r['max_capacity']:,}" if r["max_capacity"] else "-"])
    return head, rows


# ----------------------------------------------------------------------------- rendering
def md_table(head, rows) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def html_table(head, rows) -> str:
    h = "".join(f"<th>{html.escape(x)}</th>" for x in head)
    b = "".join("<tr>" + "".join(f"<td>{html.escape(x)}</td>" for x in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{h}</tr></thead><tbody>{b}</tbody></table>"


def rich_table(title, head, rows):
    from rich.table import Table

    t = Table(title=title)
    for x in head:
        t.add_column(x)
    for r in rows:
        t.add_row(*r)
    return t


def plot_latency(p: Plan, profile: dict | None, path: Path) -> Path | None:
    """Latency against work for each call: profile points and the fitted lines."""
    if not p.models:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    calls = sorted({c for (c, _) in p.models})
    cols = min(3, len(calls))
    nrows = math.ceil(len(calls) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(5 * cols, 3.6 * nrows), squeeze=False)
    rows = [r for r in (profile or {}).get("rows", []) if "work" in r]
    for ax, call in zip(axes.flat, calls, strict=False):
        for (c, place), m in sorted(p.models.items()):
            if c != call:
                continue
            pts = [(r["work"], r["latency_s"]) for r in rows
                   if r["call"] == call and r["placement"] == place]
            line = ax.plot([], [])[0]
            if pts:
                x, y = np.array(pts).T
                ax.scatter(x, y * 1e6, s=12, color=line.get_color())
            lo, hi = m.work_range
            xs = np.geomspace(max(lo, 1e-9), max(hi, lo * 10, 1.0), 50)
            ax.plot(xs, m(xs) * 1e6, color=line.get_color(),
                    label=f"{place} (err {m.rel_err_median:.0%})")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(call)
        ax.set_xlabel("work (see hrl.mapping.workload)")
        ax.set_ylabel("latency [us]")
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(calls):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_top(p: Plan, path: Path, k: int = 10) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    e = p.exploration
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, mode in zip(axes, ("strict", "relaxed"), strict=True):
        t = e.times(mode)
        labels, vals = [], []
        for r in e.top(mode, k):
            labels.append(" ".join(f"{x[0]}:{e.mapping(r)[x]}" for x in PRIMITIVES))
            vals.append(t[r] * 1e6)
        for name, m in dse.baselines(e, p.workload).items():
            r = e.row_of(m)
            if np.isfinite(t[r]):
                labels.append(f"[{name}]")
                vals.append(t[r] * 1e6)
        ax.barh(range(len(vals)), vals, color=["C0"] * (len(vals) - 3) + ["C3"] * 3
                if len(vals) >= 3 else "C0")
        ax.set_yticks(range(len(vals)), labels, fontsize=6)
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_xlabel("predicted iteration time [us]")
        ax.set_title(f"{mode} (staleness {e.staleness})" if mode == "relaxed" else mode)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_report(p: Plan, out_dir: Path, profile: dict | None, title: str) -> dict:
    """report.md, report.html, latency.png, mappings.png and mapping.json in `out_dir`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    lat_png = plot_latency(p, profile, out_dir / "latency.png")
    top_png = plot_top(p, out_dir / "mappings.png")
    e = p.exploration
    sections = [
        ("Workload", None, json.dumps(p.workload.describe())),
        ("Latency per call and placement (predicted for this workload)", latency_rows(p), None),
        ("Fitted models (latency = a + b * work)", model_rows(p), None),
        ("Top-10 mappings, strict dependency", top_rows(p, "strict"), None),
        (f"Top-10 mappings, relaxed dependency (staleness {e.staleness})",
         top_rows(p, "relaxed"), None),
        ("Top-10 mappings, pipelined executor (actors in their own process), strict",
         top_rows(p, "strict", executor="pipelined"), None),
    ]
    summary = {"workload": p.workload.describe(), "placements": {
        pl.name: {"source": pl.source, "resource": pl.resource, "link": pl.link}
        for pl in p.placements}, "notes": p.notes, "links": {
        k: {"bandwidth": v.bandwidth, "latency": v.latency, "source": v.source}
        for k, v in p.links.items()}}
    for mode in ("strict", "relaxed"):
        best = e.best(mode)
        head, rows, base = baseline_rows(p, mode)
        summary[mode] = {"chosen": e.mapping(best), "seconds": float(e.times(mode)[best]),
                         "baselines": base, "feasible_mappings": int(e.feasible.sum()),
                         "all_mappings": len(e.feasible)}
        pipelined = e.top(mode, 1, "pipelined")
        if pipelined:
            summary[mode]["pipelined"] = {
                "chosen": e.mapping(pipelined[0]),
                "seconds": float(e.times(mode, "pipelined")[pipelined[0]])}
        sections.append((f"Chosen mapping ({mode}): {dse.format_mapping(e.mapping(best))}, "
                         f"{_us(e.times(mode)[best])} us per iteration; speed-up over baselines",
                         (head, rows), None))
    fr = fpga_rows(p)
    if fr[1]:
        sections.append(("FPGA replay-manager architectures (K, lanes, depth) per board", fr,
                         None))
    (out_dir / "mapping.json").write_text(json.dumps(summary, indent=1, default=str))
    notes = "\n".join(f"- {n}" for n in p.notes) or "- every placement is measured"
    md = [f"# {title}", "", "Sources: measured = fitted to `hrl profile` on this machine; "
          "(model) = FPGA model from cycle counts and board resources; (spec model) = public "
          "specifications plus stated assumptions, not a measurement.", "", notes, ""]
    htm = [f"<h1>{html.escape(title)}</h1>", f"<pre>{html.escape(notes)}</pre>"]
    for name, table, text in sections:
        md += [f"## {name}", ""]
        htm.append(f"<h2>{html.escape(name)}</h2>")
        if table:
            md += [md_table(*table), ""]
            htm.append(html_table(*table))
        if text:
            md += ["```", text, "```", ""]
            htm.append(f"<pre>{html.escape(text)}</pre>")
    for png in (lat_png, top_png):
        if png is not None:
            md += [f"![{png.stem}]({png.name})", ""]
            htm.append(f'<img src="{png.name}" alt="{png.stem}" style="max-width:100%">')
    (out_dir / "report.md").write_text("\n".join(md))
    (out_dir / "report.html").write_text(
        "<!doctype html><html><head><meta charset='utf-8'><title>" + html.escape(title)
        + "</title><style>table{border-collapse:collapse}td,th{border:1px solid #aaa;"
        "padding:2px 6px;font:12px monospace}</style></head><body>" + "\n".join(htm)
        + "</body></html>")
    return summary


def print_summary(p: Plan, console) -> None:
    console.print(rich_table("Latency per call [us] (predicted for this workload)",
                             *latency_rows(p)))
    for mode in ("strict", "relaxed"):
        console.print(rich_table(f"Top-10 mappings ({mode})", *top_rows(p, mode)))
        head, rows, _ = baseline_rows(p, mode)
        best = p.exploration.best(mode)
        console.print(rich_table(
            f"Chosen ({mode}): {dse.format_mapping(p.exploration.mapping(best))}", head, rows))
    for n in p.notes:
        console.print(f"[yellow]note:[/yellow] {n}")
