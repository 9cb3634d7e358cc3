"""The mapping model on settings it was never fitted to (`validate_mapping.py --held-out N`).

N settings are drawn at random (numpy's generator seeded with `--seed`) from `SPACE`. For each,
every mapping `hrl.mapping.ranking.rank_mappings` ranks and the runtime can run here is run to
its steady state (chunks after the first, past learning_starts: `validate.measure_iteration`,
in a fresh process as `hrl train` would start it), and compared with its prediction from a
profile taken beforehand. Nothing is profiled here. The report gives, per setting:

* the predicted and measured steady-state env steps/s of every mapping;
* the pick (`instantiate.choose`: what `hrl train --mapping auto` would run, uncertainty rule
  included) and the default (`train.executor: auto`, no --mapping), each with its regret:
  its measured seconds per iteration over the measured best's.

A draw may include MinAtar settings (`--held-out-minatar K`, default a quarter of N): DQN on
a MinAtar game (gymnax) with a conv net (one 3x3 convolution of 16 filters, MinAtar's, then a
dense layer of the drawn width), drawn from `MINATAR_SPACE` and priced from the MinAtar
profile (`validate_mapping.PROFILE_DIRS["minatar"]`, its conv-net rows). The N - K CartPole
settings are drawn first, exactly as before MinAtar settings existed (seeds 1-9 were drawn
without them: `--held-out-minatar 0` draws them again), the K MinAtar ones after them from a
generator of their own.

Rule of use: the model is judged only on draws it was not changed after. A figure reported for
a seed was produced with the model as committed before that seed was first drawn.
"""

from __future__ import annotations

import csv
import dataclasses
import math
import statistics
from collections.abc import Callable
from pathlib import Path

import numpy as np

# The space the settings are drawn from, uniformly and independently per key. The profile
# grid of `validate_mapping.VALIDATION_GRID` covers M 8..64, B 32..256, width 64..256 at
# rollout 1 and 16; the space reaches past it on purpose (M 4 and 128, rollout 4, ratio 0.5),
# where the uncertainty rule has to hold the pick back.
SPACE = {
    "env": ("gymnax", "gymnasium"),  # CartPole-v1 in JAX (fused loop possible) or on the host
    "num_envs": (4, 8, 16, 32, 64, 128),
    "rollout": (1, 4, 16),
    "batch": (32, 64, 128, 256),
    "width": (64, 128, 256),
    "ratio": (0.0625, 0.125, 0.25, 0.5),  # SGD steps per env step
    "backend": ("jax", "opencl"),  # the config's replay backend: sets the default mapping
    "mode": ("strict", "relaxed"),
}
# The MinAtar settings' space (env "minatar"): the game, and the CartPole space's keys but for
# fewer envs (a MinAtar step costs more: 128 envs x 16 steps is a chunk of its own), the
# dense layer after the convolution `width` wide.
MINATAR_GAMES = ("Breakout-MinAtar", "SpaceInvaders-MinAtar", "Asterix-MinAtar")
MINATAR_SPACE = {
    "game": MINATAR_GAMES,
    "num_envs": (4, 8, 16, 32, 64),
    "rollout": (1, 4, 16),
    "batch": (32, 64, 128, 256),
    "width": (64, 128, 256),
    "ratio": (0.0625, 0.125, 0.25, 0.5),
    "backend": ("jax", "opencl"),
    "mode": ("strict", "relaxed"),
}
MINATAR_CONV = "[[16,3,1]]"  # agent.conv_layers of every MinAtar setting (MinAtar's torso)
# A host env steps one env after the other in Python: past this many it only takes longer.
MAX_HOST_ENVS = 32
CAPACITY = 8192
LEARNING_STARTS = 512
# Env steps of one measured chunk (train.chunk_env_steps), as `hrl train` runs its chunks.
CHUNK_ENV_STEPS = {"gymnax": 5120, "gymnasium": 1024, "minatar": 2048}
TARGETS = {"median_abs_error": 0.25, "median_pick_regret": 1.05, "worst_pick_regret": 1.25,
           "pick_vs_default": 1.10}


@dataclasses.dataclass(frozen=True)
class Setting:
    name: str
    env: str
    num_envs: int
    rollout: int
    batch: int
    width: int
    ratio: float
    backend: str
    mode: str
    game: str = ""  # a MinAtar setting's game (env "minatar")

    def overrides(self) -> list[str]:
        chunk = CHUNK_ENV_STEPS[self.env]
        steps = self.num_envs * self.rollout
        net = ([f"agent.hidden_sizes=[{self.width},{self.width}]"] if self.env != "minatar"
               else [f"env.name=gymnax:{self.game}", "agent.network=conv",
                     f"agent.conv_layers={MINATAR_CONV}", f"agent.hidden_sizes=[{self.width}]"])
        return [f"env.num_envs={self.num_envs}", f"train.rollout_length={self.rollout}",
                f"train.batch_size={self.batch}", *net,
                f"train.train_ratio={self.ratio}", f"replay.capacity={CAPACITY}",
                f"replay.backend={self.backend}", "train.executor=auto",
                f"train.learning_starts={LEARNING_STARTS}",
                f"train.chunk_env_steps={max(chunk, steps)}",
                "train.total_env_steps=10000000", "log.progress=false"]

    def iterations(self) -> int:
        """Iterations of one chunk (the measured unit)."""
        steps = self.num_envs * self.rollout
        return max(1, max(CHUNK_ENV_STEPS[self.env], steps) // steps)


def draw(n: int, seed: int, minatar: int = 0) -> list[Setting]:
    """`n` settings: `n - minatar` from `SPACE`, each key uniform and independent (a host
    env's M capped at MAX_HOST_ENVS by drawing again), then `minatar` from `MINATAR_SPACE`
    (a generator of their own, so the first ones are those a draw without MinAtar settings
    gives); the same `seed` gives the same settings. ValueError unless 0 <= minatar <= n."""
    if not 0 <= minatar <= n:
        raise ValueError(f"held-out MinAtar settings must be between 0 and {n}, got {minatar}")
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n - minatar:
        s = {k: v[rng.integers(len(v))] for k, v in SPACE.items()}
        if s["env"] == "gymnasium" and s["num_envs"] > MAX_HOST_ENVS:
            continue
        s = {k: (v.item() if hasattr(v, "item") else v) for k, v in s.items()}
        name = (f"{'gym-' if s['env'] == 'gymnasium' else ''}M{s['num_envs']}x{s['rollout']}"
                f"-B{s['batch']}-w{s['width']}-r{s['ratio']:g}-{s['backend']}-{s['mode']}")
        out.append(Setting(name=f"s{seed}.{len(out)}:{name}", **s))
    rng = np.random.default_rng([seed, 55])
    while len(out) < n:
        s = {k: v[rng.integers(len(v))] for k, v in MINATAR_SPACE.items()}
        s = {k: (v.item() if hasattr(v, "item") else v) for k, v in s.items()}
        name = (f"{s['game'].removesuffix('-MinAtar')}-M{s['num_envs']}x{s['rollout']}"
                f"-B{s['batch']}-w{s['width']}-r{s['ratio']:g}-{s['backend']}-{s['mode']}")
        out.append(Setting(name=f"s{seed}.{len(out)}:{name}", env="minatar", **s))
    return out


def run_overrides(s: Setting, mapping=None) -> list[str]:
    """The config overrides of setting `s` in its dependency mode, run as `mapping` (a
    `RankedMapping`) or, without one, as its config asks (`executor: auto`): what `run`
    ranks and measures."""
    from hrl.mapping.validate import mode_overrides

    return [*s.overrides(), *(mapping.overrides if mapping else ()),
            *mode_overrides(s.mode, 1)]


def run(n: int, seed: int, configs: dict, profiles: dict, measure: Callable, out: Path,
        backends: tuple[str, ...], console, progress, flags: str = "", rounds: int = 1,
        minatar: int = 0, resume: bool = False) -> dict:
    """Draw, predict, measure and report (module docstring). `measure(config_path, overrides,
    iterations) -> {"wall_s", ...}` runs one mapping in a fresh process. Predictions are
    scaled as `hrl map` and `--mapping auto` scale them (`hrl.mapping.speed.speed_check`).
    With `rounds` > 1 a setting's mappings are measured in that many interleaved rounds
    (every mapping once per round, the setting's rounds one after the other, so the mappings
    compared in a regret ran close in time) and each run's median is compared; the CSV keeps
    every round's seconds. `minatar`: how many of the `n` settings are MinAtar's (`draw`;
    `configs` and `profiles` then have a "minatar" entry). Writes heldout-seed<S>.csv/.md/.png
    into `out`; returns the summary. `resume`: a setting the draw's CSV in `out` already holds
    whole (every ranked mapping, `rounds` rounds each: a run stopped part way) is not measured
    again; its seconds and its speed-check scale are read back from the CSV."""
    from hrl.config import load_config
    from hrl.mapping.instantiate import choose
    from hrl.mapping.ranking import config_label
    from hrl.mapping.speed import speed_check

    # As `hrl map` and `--mapping auto` scale (or do not scale) their predictions.
    checks = {kind: speed_check(p) for kind, p in profiles.items()}
    scales = {kind: scale for kind, (scale, _) in checks.items()}
    for kind, (_, warning) in checks.items():
        if warning:
            console.print(f"{kind} profile: {warning}")
    if rounds < 1:
        raise ValueError(f"held-out rounds must be >= 1, got {rounds}")
    settings = draw(n, seed, minatar)
    jobs, picks = [], {}
    for s in settings:
        cfg = load_config(configs[s.env], run_overrides(s))
        choice = choose(cfg, profiles[s.env], backends=backends)
        picks[s.name] = (choice.mapping.label, config_label(cfg), choice.kept_default)
        jobs.append((s, choice.ranked, scales[s.env]))
    # MinAtar settings measured first (their runs are the longest): the report is written
    # again after every setting, so a draw stopped part way reports the settings it measured,
    # and says so.
    jobs.sort(key=lambda job: job[0].env != "minatar")
    rows = []
    before = _measured_before(out / f"heldout-seed{seed}.csv", jobs, rounds) if resume else {}
    if before:
        console.print(f"resumed: {len(before)} setting(s) read back from the draw's CSV")
    with progress(console=console) as bar:
        task = bar.add_task("held-out", total=sum(len(ms) for _, ms, _ in jobs) * rounds)
        for done, (s, ranked, scale) in enumerate(jobs, 1):
            seconds = {m.label: [] for m in ranked}
            if s.name in before:
                seconds, scale = before[s.name]
                bar.advance(task, len(ranked) * rounds)
            for r in range(rounds if s.name not in before else 0):
                for m in ranked:
                    bar.update(task, description=f"{s.name} {m.label} (round {r + 1})")
                    meas = measure(str(configs[s.env]), run_overrides(s, m), s.iterations())
                    seconds[m.label].append(meas["wall_s"])
                    bar.advance(task)
                    steps = s.num_envs * s.rollout
                    console.print(f"{s.name} {m.label} (round {r + 1}): "
                                  f"{steps / meas['wall_s']:,.0f} env steps/s (predicted "
                                  f"{steps / (m.seconds * scale):,.0f})")
            pick, default, kept = picks[s.name]
            steps = s.num_envs * s.rollout
            for m in ranked:
                measured = statistics.median(seconds[m.label])
                rows.append(_row(s, m, scale, measured, seconds[m.label], steps,
                                 (pick, default, kept)))
            summary = summarize(rows)
            write(rows, summary, out, seed, n, flags, (done, len(jobs)))
    return summary


def _measured_before(path: Path, jobs: list, rounds: int) -> dict:
    """{setting name: ({mapping label: [seconds per round]}, speed scale)} for each setting of
    `jobs` whose rows in the CSV at `path` cover every ranked mapping with `rounds` rounds;
    {} without a CSV. A setting measured in part is measured again, whole."""
    if not path.exists():
        return {}
    with open(path, newline="") as f:
        by = {}
        for r in csv.DictReader(f):
            by.setdefault(r["setting"], {})[r["mapping"]] = r
    before = {}
    for s, ranked, _ in jobs:
        rs = by.get(s.name, {})
        seconds = {m.label: [float(x) for x in rs[m.label]["measured_s_rounds"].split()]
                   for m in ranked if m.label in rs}
        if len(seconds) == len(ranked) and all(len(v) == rounds for v in seconds.values()):
            before[s.name] = (seconds, float(rs[ranked[0].label]["speed_scale"]))
    return before


def _row(s: Setting, m, scale: float, measured: float, rounds: list[float], steps: int,
         picked: tuple[str, str, bool]) -> dict:
    """One run's report row: its prediction, its measured (median) seconds and each round's."""
    pick, default, kept = picked
    return {
        "setting": s.name, **{k: getattr(s, k) for k in SPACE}, "game": s.game,
        "mapping": m.label, "executor": m.executor,
        "predicted_s": m.seconds * scale, "measured_s": measured,
        "predicted_env_steps_per_s": steps / (m.seconds * scale),
        "measured_env_steps_per_s": steps / measured,
        "error": measured / (m.seconds * scale) - 1.0,  # predicted / measured throughput - 1
        "speed_scale": scale, "uncertainty": m.uncertainty,
        "pick": m.label == pick, "default": m.label == default, "kept_default": kept,
        "measured_s_rounds": " ".join(f"{x:.6g}" for x in rounds)}


def summarize(rows: list[dict]) -> dict:
    """Median absolute error of predicted throughput; per setting the pick's regret, the
    default's, and the pick against the default (all on measured seconds per iteration)."""
    by = {}
    for r in rows:
        by.setdefault(r["setting"], []).append(r)
    per_setting = []
    for name, rs in by.items():
        best = min(r["measured_s"] for r in rs)
        pick = next((r for r in rs if r["pick"]), None)
        default = next((r for r in rs if r["default"]), None)
        if pick is None or default is None:
            continue  # the pick or the default failed to run: reported, not scored
        per_setting.append({
            "setting": name, "pick": pick["mapping"], "default": default["mapping"],
            "best": min(rs, key=lambda r: r["measured_s"])["mapping"],
            "pick_regret": pick["measured_s"] / best,
            "default_regret": default["measured_s"] / best,
            "pick_vs_default": pick["measured_s"] / default["measured_s"],
            "kept_default": pick["kept_default"]})
    errors = [abs(r["error"]) for r in rows]
    by_executor = {}
    for r in rows:
        by_executor.setdefault(r["executor"], []).append(r["error"])
    return {
        # per executor: (runs, median signed error, median absolute error)
        "by_executor": {ex: (len(e), statistics.median(e), statistics.median(map(abs, e)))
                        for ex, e in sorted(by_executor.items())},
        "runs": len(rows), "settings": len(per_setting), "per_setting": per_setting,
        "median_abs_error": statistics.median(errors) if errors else math.nan,
        "median_pick_regret": statistics.median(p["pick_regret"] for p in per_setting),
        "worst_pick_regret": max(p["pick_regret"] for p in per_setting),
        "median_default_regret": statistics.median(p["default_regret"] for p in per_setting),
        "worst_default_regret": max(p["default_regret"] for p in per_setting),
        "pick_vs_default": max(p["pick_vs_default"] for p in per_setting),
    }


def _family_lines(rows: list[dict]) -> list[str]:
    """The four figures over each env family's settings alone (CartPole, MinAtar), where a
    draw has both; [] otherwise."""
    families = {"CartPole": [r for r in rows if r["env"] != "minatar"],
                "MinAtar (conv net)": [r for r in rows if r["env"] == "minatar"]}
    if not all(families.values()):
        return []
    lines = ["Per env family (the same figures over its settings alone):", "",
             "| family | runs | settings | median abs. error | median pick regret | "
             "worst pick regret | worst pick / default |", "|---|---|---|---|---|---|---|"]
    for name, rs in families.items():
        f = summarize(rs)
        lines.append(f"| {name} | {f['runs']} | {f['settings']} | {f['median_abs_error']:.1%} "
                     f"| {f['median_pick_regret']:.3f}x | {f['worst_pick_regret']:.3f}x | "
                     f"{f['pick_vs_default']:.3f}x |")
    return [*lines, ""]


def write(rows: list[dict], summary: dict, out: Path, seed: int, n: int, flags: str,
          measured: tuple[int, int] | None = None) -> None:
    """The report of `rows`; `measured` (settings measured, settings drawn): a draw stopped
    part way says how far it got."""
    from hrl.mapping.profile import cpu_name

    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"heldout-seed{seed}"
    with open(stem.with_suffix(".csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    ok = {k: summary[k] <= v for k, v in TARGETS.items()}
    scales = ", ".join(sorted({f"{r['speed_scale']:.2f}x" for r in rows}))
    lines = [
        f"# Mapping model on held-out settings (seed {seed})", "",
        f"Machine: {cpu_name()}. Regenerate: `.venv/bin/python "
        f"experiments/mapping/validate_mapping.py --held-out {n} --seed {seed} {flags}`. "
        "Settings drawn from `experiments/mapping/heldout.py` SPACE (and MINATAR_SPACE); the "
        "profiles were taken "
        "before the draw, and nothing was fitted to these runs. Predictions scaled as `hrl map` "
        f"scales them (`hrl.mapping.speed.speed_check`): {scales}.", "",
        *([f"**Partial: {measured[0]} of the {measured[1]} settings drawn were measured** "
           "(the draw stopped before the others).", ""]
          if measured and measured[0] < measured[1] else []),
        "| figure | value | target | met |", "|---|---|---|---|",
        f"| median abs. error of predicted env steps/s ({summary['runs']} runs) | "
        f"{summary['median_abs_error']:.1%} | <= 25% | {ok['median_abs_error']} |",
        f"| median pick regret ({summary['settings']} settings) | "
        f"{summary['median_pick_regret']:.3f}x | <= 1.05x | {ok['median_pick_regret']} |",
        f"| worst pick regret | {summary['worst_pick_regret']:.3f}x | <= 1.25x | "
        f"{ok['worst_pick_regret']} |",
        f"| worst pick / default (measured time) | {summary['pick_vs_default']:.3f}x | "
        f"<= 1.10x | {ok['pick_vs_default']} |",
        f"| median / worst default regret (no --mapping) | "
        f"{summary['median_default_regret']:.3f}x / {summary['worst_default_regret']:.3f}x "
        "| - | - |", "",
        "Per executor (error: predicted / measured throughput - 1):", "",
        "| executor | runs | median error | median abs. error |", "|---|---|---|---|",
        *(f"| {ex} | {n_runs} | {signed:+.1%} | {absolute:.1%} |"
          for ex, (n_runs, signed, absolute) in summary["by_executor"].items()), "",
        *_family_lines(rows),
        "## Per setting", "",
        "| setting | pick | default | measured best | pick regret | default regret | "
        "pick / default | default kept for uncertainty |", "|---|---|---|---|---|---|---|---|"]
    for p in summary["per_setting"]:
        lines.append(f"| {p['setting']} | {p['pick']} | {p['default']} | {p['best']} | "
                     f"{p['pick_regret']:.3f} | {p['default_regret']:.3f} | "
                     f"{p['pick_vs_default']:.3f} | {p['kept_default']} |")
    lines += ["", "## Every run", "",
              "| setting | mapping | predicted env steps/s | measured | error | uncertainty |",
              "|---|---|---|---|---|---|"]
    for r in rows:
        mark = " (pick)" if r["pick"] else ""
        mark += " (default)" if r["default"] else ""
        lines.append(f"| {r['setting']} | {r['mapping']}{mark} | "
                     f"{r['predicted_env_steps_per_s']:,.0f} | "
                     f"{r['measured_env_steps_per_s']:,.0f} | {r['error']:+.1%} "
                     f"| {r['uncertainty']:.0%} |")
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    plot(rows, stem.with_suffix(".png"), seed)


def plot(rows: list[dict], path: Path, seed: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 5.5))
    executors = sorted({r["executor"] for r in rows})
    for i, ex in enumerate(executors):
        rs = [r for r in rows if r["executor"] == ex]
        ax.scatter([r["measured_env_steps_per_s"] for r in rs],
                   [r["predicted_env_steps_per_s"] for r in rs], color=f"C{i}", s=18,
                   label=ex, alpha=0.8)
    picked = [r for r in rows if r["pick"]]
    ax.scatter([r["measured_env_steps_per_s"] for r in picked],
               [r["predicted_env_steps_per_s"] for r in picked], facecolors="none",
               edgecolors="k", s=90, label="pick (--mapping auto)")
    values = [v for r in rows for v in (r["measured_env_steps_per_s"],
                                        r["predicted_env_steps_per_s"])]
    lo, hi = min(values) * 0.7, max(values) * 1.4
    ax.plot([lo, hi], [lo, hi], "k--", lw=0.8)
    ax.fill_between([lo, hi], [lo * 0.75, hi * 0.75], [lo * 1.25, hi * 1.25], color="0.92")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured env steps/s (steady state)")
    ax.set_ylabel("predicted env steps/s")
    ax.set_title(f"held-out settings, seed {seed} (band: +-25%)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
