"""The mapping report: tables (rich for the terminal, Markdown and HTML on disk) and PNG plots.

Contents: the primitive x placement latency table for the run's workload (with each
placement's source: measured / fpga-model / gpu-spec), the fit error of every model, the
latency of each call against its work (profile points and fitted lines), the top-10 mappings
in strict and relaxed mode, the chosen mapping, its predicted speed-up over the baselines,
the FPGA architecture exploration of each modelled board and, for a device kind given a
count (`--devices cpu*4`), the data-parallel candidates on D of them with their predicted
scaling curve (`hrl.mapping.parallel`).
"""

from __future__ import annotations

import csv
import html
import json
import math
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from rich.table import Table

from hrl.mapping import dse, parallel
from hrl.mapping import fpga as fpga_model
from hrl.mapping.plan import Plan
from hrl.mapping.profile.rows import profile_rows
from hrl.mapping.scaling import UNMEASURED_RENDEZVOUS
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
    # one table per board: `fpga:u250` and `fpga:u250:8x32` hold the same RMM
    boards = dict.fromkeys(pl.name.split(":")[1] for pl in p.placements
                           if pl.kind == "fpga-model")
    for name in boards:
        board = fpga_model.get_board(name)
        for r in fpga_model.explore(w.capacity, board, w.batch_size, p.rmm_timing):
            rows.append([board.name, str(r["fanout"]), str(r["lanes"]), str(r["depth"]),
                         "yes" if r["fits"] else "no", f"{r['util_lut']:.1%}",
                         f"{r['util_ff']:.1%}", f"{r['util_bram36']:.1%}",
                         f"{r['util_uram']:.1%}", _us(r["sample_s"]),
                         f"{r['max_capacity']:,}" if r["max_capacity"] else "-"])
    return head, rows


DP_FIELDS = ["mode", "kind", "devices", "sampling", "scaling", "iteration_s",
             "env_steps_per_iter", "env_steps_per_s", "samples_per_s", "speedup_vs_1_device",
             "vs_best_single_device_mapping", "collectives_s_per_sgd_step", "link"]


def data_parallel_records(p: Plan) -> list[dict]:
    """One record per data-parallel candidate and mode (the CSV's rows)."""
    out = []
    w = p.workload
    for mode, cands in p.data_parallel.items():
        t = p.exploration.times(mode)[p.exploration.best(mode)]
        best_single = w.num_envs * w.rollout_length / t
        for c in cands:
            out.append({
                "mode": mode, "kind": c.kind, "devices": c.devices, "sampling": c.sampling,
                "scaling": c.scaling, "iteration_s": c.iteration_s,
                "env_steps_per_iter": c.env_steps_per_iter, "env_steps_per_s": c.env_steps_per_s,
                "samples_per_s": c.samples_per_s, "speedup_vs_1_device": c.speedup,
                "vs_best_single_device_mapping": c.env_steps_per_s / best_single,
                "collectives_s_per_sgd_step": c.model.collectives_s(c.devices),
                "link": c.model.device_link.name})
    return out


def data_parallel_rows(p: Plan, mode: str) -> tuple[list[str], list[list[str]]]:
    head = ["kind", "D", "sampling", "iteration [us]", "env steps/iter", "env steps/s",
            "samples/s", "speed-up vs 1 device", "vs best 1-device mapping", "pays?"]
    rows = []
    recs = [r for r in data_parallel_records(p) if r["mode"] == mode]
    best = {}
    for r in recs:
        key = (r["kind"], r["sampling"])
        best[key] = max(best.get(key, 0.0), r["env_steps_per_s"])
    for r in recs:
        key = (r["kind"], r["sampling"])
        best_d = min(x["devices"] for x in recs
                     if (x["kind"], x["sampling"]) == key and x["env_steps_per_s"] >= best[key])
        if r["devices"] == 1:
            pays = "(baseline)"
        elif r["devices"] == best_d:
            pays = "best" if r["speedup_vs_1_device"] > 1.0 else "no"
        elif r["speedup_vs_1_device"] <= 1.0:
            pays = "no"
        elif r["devices"] > best_d:
            pays = f"no more than D={best_d}"
        else:
            pays = "yes"
        rows.append([r["kind"], str(r["devices"]), r["sampling"], _us(r["iteration_s"]),
                     f"{r['env_steps_per_iter']:,}", f"{r['env_steps_per_s']:,.0f}",
                     f"{r['samples_per_s']:,.0f}", f"{r['speedup_vs_1_device']:.2f}x",
                     f"{r['vs_best_single_device_mapping']:.2f}x", pays])
    return head, rows


def ranked_rows(p: Plan, mode: str, k: int = 10) -> tuple[list[str], list[list[str]]]:
    """Single-device mappings and D-device candidates in one ranking, by env steps/s."""
    head = ["rank", "candidate", "devices", "env steps/iter", "iteration [us]", "env steps/s"]
    w = p.workload
    times = p.exploration.times(mode)
    rows = []
    for rank, (label, rate, item) in enumerate(p.ranked(mode, k)[:k], 1):
        if not isinstance(item, parallel.Candidate):
            places = set(p.exploration.mapping(item).values())
            label = f"all on {places.pop()}" if len(places) == 1 else label
        if isinstance(item, parallel.Candidate):
            rows.append([str(rank), label, str(item.devices), f"{item.env_steps_per_iter:,}",
                         _us(item.iteration_s), f"{rate:,.0f}"])
        else:
            rows.append([str(rank), label, "1", f"{w.num_envs * w.rollout_length:,}",
                         _us(times[item]), f"{rate:,.0f}"])
    return head, rows


def auto_rows(ranking, overrides: bool = True) -> tuple[list[str], list[list[str]]]:
    """Every mapping of `ranking.rank_mappings` (the one ranking), fastest first: the first
    marked `picked` is what `hrl train --mapping auto` runs on this config and profile; the
    others runnable here are what it may pick (`yes`). `overrides`: a column with the config
    overrides that run each (left out on the console, where it would not fit)."""
    head = ["rank", "mapping", "executor", "devices", "iteration [us]", "env steps/s",
            "uncertainty", "--mapping auto", *(["config overrides"] if overrides else [])]
    rows = []
    best = ranking.pick()[0].label if ranking.runnable() else None
    for rank, m in enumerate(ranking.mappings, 1):
        mark = ("picked" if m.label == best else "yes" if m.runnable
                else f"no: {m.why_not}")
        rows.append([str(rank), m.label, m.executor, str(m.devices), _us(m.seconds),
                     f"{ranking.env_steps_per_iter / m.seconds:,.0f}",
                     f"+-{m.uncertainty:.0%}", mark,
                     *([" ".join(m.overrides)] if overrides else [])])
    return head, rows


def auto_notes(ranking) -> list[str]:
    """Why the pick, and what the ranking left out and why, one line each."""
    why = [f"pick: {ranking.pick()[2]}"] if ranking.runnable() else []
    return why + [f"data parallel not ranked for {n}" if n.startswith("D=") else n
                  for n in ranking.notes] + ranking.unranked


def auto_title(ranking) -> str:
    return (f"Runnable mappings ({ranking.mode} dependency, staleness {ranking.staleness}): "
            "what `hrl train --mapping auto` ranks and picks")


def auto_records(ranking) -> dict:
    """The ranking as `mapping.json` keeps it."""
    return {"mode": ranking.mode, "staleness": ranking.staleness,
            "picked": ranking.pick()[0].label if ranking.runnable() else None,
            "notes": auto_notes(ranking),
            "ranking": [{"label": m.label, "executor": m.executor, "devices": m.devices,
                         "seconds": m.seconds, "uncertainty": m.uncertainty,
                         "runnable": m.runnable, "why_not": m.why_not,
                         "overrides": list(m.overrides), "mapping": m.mapping}
                        for m in ranking.mappings]}


def scaling_text(p: Plan) -> str:
    """How D-device candidates compare with single-device ones, and when they do not pay."""
    if p.scaling == "weak":
        how = ("Weak scaling: a D-device candidate runs the config's whole iteration on every "
               "device (D x env.num_envs actors, a global batch of D x train.batch_size, "
               "D x replay.capacity in D shards), so one iteration makes D times the env steps "
               "of a single-device mapping; candidates are therefore compared by env steps "
               "per second, not by iteration time. `hrl train --mapping auto` runs the "
               "config's own work split over D devices instead (strong scaling: "
               "`hrl map --scaling strong`), which changes no hyperparameter.")
    else:
        how = ("Strong scaling: a D-device candidate runs the config's iteration split D ways "
               "(train.devices: D; env.num_envs, train.batch_size and replay.capacity divided "
               "by D), so every candidate makes the same env steps per iteration and the "
               "ranking by env steps per second is the ranking by iteration time.")
    model = ("Model (`hrl.mapping.scaling`): T(D) = T_1 x max(1, D / cores) + U x collectives "
             "per SGD step, T_1 the kind's fused-loop prediction for one device's work, cores "
             "shared by virtual CPU devices (a GPU has its own), collectives as ring messages "
             "over the device link (global sampling: gradient all-reduce, shard roots, batch "
             "scatter, update gather, 3 scalar reductions; local sampling: the gradient "
             "all-reduce only).")
    model += "".join(" " + t for t in link_texts(p))
    verdicts = "\n".join(f"- {v}" for v in parallel.verdicts(
        p.data_parallel.get("strict", []), p.cores))
    over_processes = (
        "Over processes or hosts (`hrl launch`), every SGD step of a data-parallel learner also "
        "waits on its collectives across processes; on CPU hosts (gloo over the network or "
        "loopback) that costs more than a second process gains. There, scale a host env with "
        "distributed actors instead (`train.executor: distributed`: actors on any host, one "
        "learner, no collective).")
    return f"{how}\n\n{model}\n\n{over_processes}\n\nStrict dependency:\n\n{verdicts}"


def link_texts(p: Plan) -> list[str]:
    """Per kind: the device link its collectives are priced with, and whether the rendezvous
    of virtual CPU devices is in it ("collective rendezvous not measured: optimistic")."""
    out = []
    seen = set()
    for c in p.data_parallel.get("strict", []):
        if c.kind in seen:
            continue
        seen.add(c.kind)
        link = c.model.device_link
        text = (f"{c.kind}: collectives over {link.name} ({link.latency * 1e6:.3g} us + bytes / "
                f"{link.bandwidth / 1e9:.3g} GB/s per message; {link.source})")
        if not c.model.rendezvous_priced:
            text += f"; {UNMEASURED_RENDEZVOUS}"
        out.append(text + ".")
    return out


def write_data_parallel_csv(p: Plan, path: Path) -> Path | None:
    recs = data_parallel_records(p)
    if not recs:
        return None
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=DP_FIELDS)
        w.writeheader()
        for r in recs:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})
    return path


def plot_scaling(p: Plan, path: Path) -> Path | None:
    """Predicted speed-up (env steps/s relative to one device of the kind) against D, one
    panel per kind, a curve per sampling mode and dependency mode, beside the ideal."""
    recs = data_parallel_records(p)
    if not recs:
        return None

    kinds = sorted({r["kind"] for r in recs})
    fig = Figure(figsize=(5.5 * len(kinds), 4))
    axes = fig.subplots(1, len(kinds), squeeze=False)
    for ax, kind in zip(axes[0], kinds, strict=True):
        ds = sorted({r["devices"] for r in recs if r["kind"] == kind})
        ideal = [min(d, p.cores) if kind == "cpu" else d for d in ds]
        ax.plot(ds, ideal, "k--", lw=1,
                label=f"ideal: min(D, {p.cores} cores)" if kind == "cpu" else "ideal: D")
        for mode, style in (("strict", "-o"), ("relaxed", ":s")):
            for sampling in parallel.SAMPLINGS:
                pts = [(r["devices"], r["speedup_vs_1_device"]) for r in recs
                       if r["kind"] == kind and r["mode"] == mode and r["sampling"] == sampling]
                if pts:
                    x, y = zip(*pts, strict=True)
                    ax.plot(x, y, style, ms=4, label=f"predicted, {sampling}, {mode}")
        ax.axhline(1.0, color="grey", lw=0.6)
        ax.set_xlabel(f"{kind} devices D")
        ax.set_ylabel("env steps/s relative to 1 device")
        ax.set_title(f"{kind}: data-parallel fused loop ({p.scaling} scaling, predicted)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


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

    calls = sorted({c for (c, _) in p.models})
    cols = min(3, len(calls))
    nrows = math.ceil(len(calls) / cols)
    fig = Figure(figsize=(5 * cols, 3.6 * nrows))
    axes = fig.subplots(nrows, cols, squeeze=False)
    rows = [r for r in profile_rows(profile) if r.work is not None]
    for ax, call in zip(axes.flat, calls, strict=False):
        for (c, place), m in sorted(p.models.items()):
            if c != call:
                continue
            pts = [(r.work, r.latency_s) for r in rows
                   if r.call == call and r.placement == place]
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
    return path


def plot_top(p: Plan, path: Path, k: int = 10) -> Path:

    e = p.exploration
    fig = Figure(figsize=(12, 4.5))
    axes = fig.subplots(1, 2)
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
    return path


def write_report(p: Plan, out_dir: Path, profile: dict | None, title: str,
                 ranking=None) -> dict:
    """report.md, report.html, latency.png, mappings.png and mapping.json in `out_dir`.
    `ranking` (`ranking.rank_mappings`): the mappings `hrl train --mapping auto` ranks, shown
    first and kept in mapping.json under "auto"."""
    out_dir.mkdir(parents=True, exist_ok=True)
    lat_png = plot_latency(p, profile, out_dir / "latency.png")
    top_png = plot_top(p, out_dir / "mappings.png")
    dp_png = plot_scaling(p, out_dir / "scaling.png")
    dp_csv = write_data_parallel_csv(p, out_dir / "data_parallel.csv")
    e = p.exploration
    sections = [
        ("Workload", None, json.dumps(p.workload.describe())),
        *([(auto_title(ranking), auto_rows(ranking),
            auto_notes(ranking) or None)] if ranking else []),
        ("Latency per call and placement (predicted for this workload)", latency_rows(p), None),
        ("Fitted models (latency = a + b * work)", model_rows(p), None),
        ("Top-10 mappings, strict dependency", top_rows(p, "strict"), None),
        (f"Top-10 mappings, relaxed dependency (staleness {e.staleness})",
         top_rows(p, "relaxed"), None),
        ("Top-10 mappings, pipelined executor (actors in their own process), strict",
         top_rows(p, "strict", executor="pipelined"), None),
        ("Top-10 mappings, pipelined executor (actors in a thread of the learner's process), "
         "strict", top_rows(p, "strict", executor="pipelined-thread"), None),
    ]
    summary = {"workload": p.workload.describe(), "placements": {
        pl.name: {"source": pl.source, "resource": pl.resource, "link": pl.link}
        for pl in p.placements}, "notes": p.notes, "links": {
        k: {"bandwidth": v.bandwidth, "latency": v.latency, "source": v.source}
        for k, v in p.links.items()}}
    if ranking is not None:
        summary["auto"] = auto_records(ranking)
    for mode in ("strict", "relaxed"):
        best = e.best(mode)
        head, rows, base = baseline_rows(p, mode)
        summary[mode] = {"chosen": e.mapping(best), "seconds": float(e.times(mode)[best]),
                         "baselines": base, "feasible_mappings": int(e.feasible.sum()),
                         "all_mappings": len(e.feasible)}
        for executor in ("pipelined", "pipelined-thread"):
            top = e.top(mode, 1, executor)
            if top:
                summary[mode][executor] = {
                    "chosen": e.mapping(top[0]),
                    "seconds": float(e.times(mode, executor)[top[0]])}
        sections.append((f"Best explored mapping ({mode}; modelled devices and combinations "
                         f"the runtime cannot run included): "
                         f"{dse.format_mapping(e.mapping(best))}, "
                         f"{_us(e.times(mode)[best])} us per iteration; speed-up over baselines",
                         (head, rows), None))
    if p.data_parallel:
        sections.append(("Data-parallel candidates: the fused loop on D devices of a kind",
                         None, scaling_text(p).split("\n\n")))
        for mode in ("strict", "relaxed"):
            sections.append((f"D-device candidates ({mode}; {p.scaling} scaling)",
                             data_parallel_rows(p, mode), None))
            sections.append((f"All candidates by predicted env steps/s ({mode}): top "
                             "single-device mappings and D-device candidates",
                             ranked_rows(p, mode), None))
        summary["data_parallel"] = {"scaling": p.scaling, "counts": p.device_counts,
                                    "cores": p.cores, "links": link_texts(p),
                                    "verdicts": parallel.verdicts(p.data_parallel["strict"],
                                                                  p.cores),
                                    "candidates": data_parallel_records(p)}
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
        if isinstance(text, list):  # prose: Markdown paragraphs
            for t in text:
                md += [t, ""]
            htm += [f"<p>{html.escape(t)}</p>" for t in text]
        elif text:
            md += ["```", text, "```", ""]
            htm.append(f"<pre>{html.escape(text)}</pre>")
    if dp_csv is not None:
        md += [f"Data-parallel candidates as CSV: [{dp_csv.name}]({dp_csv.name})", ""]
    for png in (lat_png, top_png, dp_png):
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


def print_summary(p: Plan, console, ranking=None) -> None:
    """The console tables; `ranking` (`ranking.rank_mappings`) adds the mappings
    `hrl train --mapping auto` ranks, the one it picks marked."""
    console.print(rich_table("Latency per call [us] (predicted for this workload)",
                             *latency_rows(p)))
    if ranking is not None:
        console.print(rich_table(auto_title(ranking), *auto_rows(ranking, overrides=False)))
        for n in auto_notes(ranking):
            console.print(f"[yellow]--mapping auto:[/yellow] {n}")
    for mode in ("strict", "relaxed"):
        console.print(rich_table(f"Top-10 mappings ({mode})", *top_rows(p, mode)))
        head, rows, _ = baseline_rows(p, mode)
        best = p.exploration.best(mode)
        console.print(rich_table(
            f"Best explored ({mode}, not necessarily runnable): "
            f"{dse.format_mapping(p.exploration.mapping(best))}", head, rows))
    if p.data_parallel:
        console.print(rich_table(f"D-device candidates (strict; {p.scaling} scaling)",
                                 *data_parallel_rows(p, "strict")))
        console.print(rich_table("All candidates by predicted env steps/s (strict)",
                                 *ranked_rows(p, "strict")))
        for v in parallel.verdicts(p.data_parallel["strict"], p.cores):
            console.print(f"[cyan]data parallel:[/cyan] {v}")
        for t in link_texts(p):
            console.print(f"[cyan]data parallel:[/cyan] {t}")
    for n in p.notes:
        console.print(f"[yellow]note:[/yellow] {n}")
