"""The documentation site's generated pages: the CLI and config references and the results.

`docs/hooks.py` calls `generated_pages(repo)` while `mkdocs build` collects its files, so these
pages are written from the code and from experiments/results at every build and never copied
by hand. Run alone, it writes them under a folder to read them:

    .venv/bin/python experiments/docs/gen_pages.py --out /tmp/hrl-docs-pages

* `reference/cli.md`: each `hrl` subcommand's `--help`, from the argparse parsers;
* `reference/config.md`: every config key, from `hrl.config.reference` (the schema's source);
* `results/index.md` and one page per folder of experiments/results holding a figure or a
  table: each PNG with the command that regenerates it, the machine and the date (the last
  commit that touched the file), then the folder's Markdown tables. A new results folder shows
  up without an edit here. The command is the "Regenerate:"/"Command:" line of the figure's
  own .md (same name), else of another .md in its folder, else the row naming the folder or
  file in the nearest README.md table above it.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # run as a script or loaded by path from docs/hooks.py
    sys.path.insert(0, str(REPO))

from hrl.cli import make_parser  # noqa: E402
from hrl.config.reference import config_reference_markdown  # noqa: E402

RESULTS = Path("experiments/results")
COMMAND_RE = re.compile(r"(?:Regenerate|Command):\s*`([^`]+)`")
MACHINE_RE = re.compile(r"Machine:\s*([^.\n]+(?:\.\d[^.\n]*)?)")
LINK_RE = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")
SKIP_DIRS = {"gpu_logs"}  # logs, not figures or tables
GITHUB_NOTE = "the file in the repository"


# ---------------------------------------------------------------------------- CLI


def cli_markdown() -> str:
    """One section per `hrl` subcommand with its `--help` text (argparse's own words)."""
    parser = make_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    out = ["# Command line", "",
           "Generated from the argparse parsers of `hrl/commands/` when the site is built.", "",
           "```text", _help(parser), "```", ""]
    for name, command in sorted(sub.choices.items()):
        out += [f"## hrl {name}", "", "```text", _help(command), "```", ""]
    return "\n".join(out)


def _help(parser: argparse.ArgumentParser) -> str:
    with _columns(100):
        return parser.format_help().rstrip()


@contextlib.contextmanager
def _columns(n: int):
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(n)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old


# ---------------------------------------------------------------------------- results


def _git_date(repo: Path, path: Path) -> str:
    """The date of the last commit touching `path`, else the file's modification date."""
    try:
        out = subprocess.run(["git", "log", "-1", "--format=%cs", "--", str(path)], cwd=repo,
                             capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        out = ""
    if out:
        return out
    mtime = (repo / path).stat().st_mtime
    return dt.datetime.fromtimestamp(mtime, dt.UTC).strftime("%Y-%m-%d") + " (uncommitted)"


def _readme_rows(readme: Path) -> dict[str, tuple[str, str]]:
    """Table rows of a results README: each backticked name in the first cell -> (what,
    regenerate), names without their trailing slash or braces."""
    rows: dict[str, tuple[str, str]] = {}
    if not readme.exists():
        return rows
    header = ""
    for line in readme.read_text().splitlines():
        if not line.startswith("|"):
            header = ""
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not header:
            header = cells[-1].lower()  # a table's first row
            continue
        if "regenerate" not in header or len(cells) < 3 or not cells[0].startswith("`"):
            continue
        for name in re.findall(r"`([^`]+)`", cells[0]):
            rows.setdefault(name.rstrip("/"), (cells[1], cells[-1]))
    return rows


def _command_in(md: Path) -> str | None:
    if not md.exists():
        return None
    match = COMMAND_RE.search(md.read_text())
    return f"`{match.group(1).strip()}`" if match else None


def _map_command(repo: Path, folder: Path) -> str | None:
    """The `hrl map` command line a report folder's request.json records."""
    path = repo / folder / "request.json"
    if not path.exists():
        return None
    req = json.loads(path.read_text())
    profile = str(req.get("profile") or "")
    if str(RESULTS) in profile:  # an absolute path of the machine it ran on
        profile = str(RESULTS) + profile.split(str(RESULTS), 1)[1]
    config = str(req["config"])
    if "experiments/" in config:
        config = "experiments/" + config.split("experiments/", 1)[1]
    parts = [".venv/bin/hrl map", config, f"--profile {profile}"]
    parts += [f"--set {o}" for o in req.get("overrides") or []]
    if req.get("devices"):
        parts.append("--devices " + ",".join(req["devices"]))
    for key in ("staleness", "metric", "scaling"):
        if req.get(key) is not None:
            parts.append(f"--{key} {req[key]}")
    if req.get("gpu_spec"):
        parts.append(f"--gpu-spec {req['gpu_spec']}")
    parts.append(f"--out {folder.as_posix()}")
    return "`" + " ".join(parts) + "`"


def _machine_in(md: Path) -> str | None:
    if not md.exists():
        return None
    text = md.read_text()
    match = MACHINE_RE.search(text)
    if match:
        return match.group(1).strip()
    for line in text.splitlines()[1:8]:  # e.g. "x86_64, 2 cores, jax 0.10.2, ..."
        if ("cores" in line or "CPUs" in line) and not line.startswith(("-", "|", "*")):
            return re.split(r"\. |; ", line)[0].strip().rstrip(".")
    return None


def _machine_json(repo: Path, folder: Path) -> str | None:
    """The machine a profile or a peers run names, or the profile a map report was made
    from (its request.json)."""
    for name in ("profile.json", "meta.json"):
        path = repo / folder / name
        if path.exists():
            machine = json.loads(path.read_text()).get("machine")
            if machine:
                return str(machine)
    request = repo / folder / "request.json"
    if request.exists():
        profile = str(json.loads(request.read_text()).get("profile") or "")
        if str(RESULTS) in profile:
            rel = Path(str(RESULTS) + profile.split(str(RESULTS), 1)[1])
            found = _machine_json(repo, rel) if (repo / rel).is_dir() else None
            if found:
                return f"{found} (the machine of the profile `{rel.as_posix()}`)"
    return None


def _readme_command(repo: Path, folder: Path, name: str) -> tuple[str | None, str | None]:
    """(what, command) for a file or folder from the nearest README table above it."""
    here = folder
    while True:
        rows = _readme_rows(repo / here / "README.md")
        rel = (folder / name).relative_to(here).as_posix()
        for key in (rel, rel.rsplit(".", 1)[0], *_parents(folder.relative_to(here))):
            for row_name, row in rows.items():
                if row_name == key or row_name.startswith(key + ".{") or \
                        row_name.split(".{")[0] == key.rsplit(".", 1)[0]:
                    return row
        if here == RESULTS or here == Path("."):
            return None, None
        here = here.parent


def _describe(repo: Path, folder: Path) -> str | None:
    """What a results folder holds: the README row naming that very folder, else the title of
    its first Markdown file, else the row of the folder it sits in."""
    here = folder.parent
    while True:
        rows = _readme_rows(repo / here / "README.md")
        row = rows.get(folder.relative_to(here).as_posix())
        if row:
            return row[0]
        if here == RESULTS or here == Path("."):
            break
        here = here.parent
    for md in sorted((repo / folder).glob("*.md")):
        if md.name != "README.md":
            title = md.read_text().splitlines()[0].lstrip("#").strip()
            if title:
                return title
    return _readme_command(repo, folder, "")[0]


def _parents(rel: Path) -> list[str]:
    parts = rel.parts
    return ["/".join(parts[: i + 1]) for i in range(len(parts) - 1, -1, -1)] if parts else []


def _plain_links(text: str) -> str:
    """Relative links in a results file point into the repository, not the site: keep the
    words, name the target as code."""
    def repl(m: re.Match) -> str:
        bang, words, target = m.groups()
        if target.startswith(("http://", "https://", "#")):
            return m.group(0)
        return f"{words} (`{target}`)" if not bang else f"(figure `{target}`)"
    return LINK_RE.sub(repl, text)


def _demote(text: str) -> str:
    return re.sub(r"^(#{1,5}) ", r"#\1 ", text, flags=re.M)


def _folder_page(repo: Path, folder: Path, site_dir: str) -> tuple[str, dict[str, bytes]]:
    files = sorted(p for p in (repo / folder).iterdir() if p.is_file())
    pngs = [p for p in files if p.suffix == ".png"]
    mds = [p for p in files if p.suffix == ".md" and p.name != "README.md"]
    htmls = [p for p in files if p.suffix == ".html"]
    others = [p for p in files if p.suffix in (".csv", ".json") and p.stat().st_size < 2_000_000]
    what = _describe(repo, folder)
    rel_folder = folder.relative_to(RESULTS).as_posix()
    out = [f"# {rel_folder}", ""]
    if what:
        out += [_plain_links(what), ""]
    out += [f"Files in `{folder.as_posix()}/`.", ""]
    assets: dict[str, bytes] = {}
    folder_command = _map_command(repo, folder) or next((c for c in map(_command_in, mds) if c),
                                                        None)
    folder_machine = _machine_json(repo, folder) or next((m for m in map(_machine_in, mds) if m),
                                                          None)
    for png in pngs:
        md = png.with_suffix(".md")
        if not md.exists():  # a table that names the figure
            md = next((m for m in mds if png.name in m.read_text()), md)
        command = (_map_command(repo, folder) or _command_in(md)
                   or _readme_command(repo, folder, png.name)[1] or folder_command)
        machine = _machine_in(md) or folder_machine or "not recorded in the results file"
        date = _git_date(repo, png.relative_to(repo))
        assets[f"{site_dir}/{png.name}"] = png.read_bytes()
        out += [f"## {png.stem}", "", f"![{png.stem}]({png.name})", "",
                f"- regenerate: {_plain_links(command) if command else _NO_COMMAND}",
                f"- machine: {_plain_links(machine)}", f"- date: {date}", ""]
    for html in htmls:
        assets[f"{site_dir}/{html.name}"] = html.read_bytes()
        out += [f"[{html.name}]({html.name}): the same report as a standalone page.", ""]
    for other in others:
        assets[f"{site_dir}/{other.name}"] = other.read_bytes()
    if others:
        out += ["Data: " + ", ".join(f"[{o.name}]({o.name})" for o in others), ""]
    for md in mds:
        date = _git_date(repo, md.relative_to(repo))
        out += [f"## {md.name}", "", f"Last changed {date}.", "",
                _demote(_plain_links(md.read_text())), ""]
    return "\n".join(out), assets


_NO_COMMAND = "not named in the results files (see experiments/results/README.md)"


def results_pages(repo: Path = REPO) -> dict[str, str | bytes]:
    """`results/index.md`, one page per results folder holding a figure or a table, and the
    figures, HTML reports and data files those pages show or link."""
    pages: dict[str, str | bytes] = {}
    folders = []
    for path in sorted((repo / RESULTS).rglob("*")):
        if not path.is_dir() or any(part in SKIP_DIRS for part in path.parts):
            continue
        if any(p.suffix in (".png", ".md", ".html") and p.name != "README.md"
               for p in path.iterdir() if p.is_file()):
            folders.append(path.relative_to(repo))
    index = ["# Results", "",
             "Every figure of hrl, generated from `experiments/results/` when this site is built",
             "(`experiments/docs/gen_pages.py`). Each figure names the command that regenerates",
             "it, the machine it was measured on and the date of the commit that last changed",
             "it. Timings are of the machine named: compare within one page, not across",
             "machines.", "",
             "| results | what |", "| --- | --- |"]
    for folder in folders:
        rel = folder.relative_to(RESULTS).as_posix()
        site_dir = f"results/{rel}"
        text, assets = _folder_page(repo, folder, site_dir)
        pages[f"{site_dir}/index.md"] = text
        pages.update(assets)
        what = _describe(repo, folder)
        index.append(f"| [{rel}]({rel}/index.md) | {_plain_links(what or '-')} |")
    pages["results/index.md"] = "\n".join(index) + "\n"
    return pages


def generated_pages(repo: Path = REPO) -> dict[str, str | bytes]:
    """Every generated page by its path under docs/ (text) and the files they show (bytes)."""
    pages: dict[str, str | bytes] = {
        "reference/cli.md": cli_markdown(),
        "reference/config.md": config_reference_markdown(),
    }
    pages.update(results_pages(repo))
    return pages


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder to write the pages into")
    args = parser.parse_args()
    out = Path(args.out)
    for rel, content in generated_pages().items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    print(f"wrote {len(generated_pages())} files under {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
