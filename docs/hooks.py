"""mkdocs hook: add the generated pages (experiments/docs/gen_pages.py) to the build.

They are made from the code and from experiments/results at every build, so the CLI and config
references and the results page cannot drift from what they describe.

The hand-written pages link to the repository's own files, so that their links work where
GitHub shows them: `experiments/results/<folder>/` (or a file in it), `hrl/config/schema.py`,
`hrl/commands/`. In the site, `on_page_markdown` points each such link at the generated page
made from that file (results/<folder>/index.md, reference/config.md, reference/cli.md), and
mkdocs --strict then checks it like any other link.
"""

from __future__ import annotations

import importlib.util
import posixpath
import re
from pathlib import Path

from mkdocs.structure.files import File, Files

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "experiments" / "results"
# Repository files whose generated page stands in for them in the site.
STAND_INS = {REPO / "hrl" / "config" / "schema.py": "reference/config.md",
             REPO / "hrl" / "commands": "reference/cli.md"}
LINK = re.compile(r"(\]\()([^)\s#]+)(#[^)\s]*)?(\))")


def _generator():
    spec = importlib.util.spec_from_file_location(
        "hrl_docs_gen_pages", REPO / "experiments" / "docs" / "gen_pages.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def on_files(files: Files, config) -> Files:
    for path, content in _generator().generated_pages(REPO).items():
        files.append(File.generated(config, path, content=content))
    return files


def site_target(page_src: str, link: str) -> str | None:
    """The site path (under docs/) standing in for the repository file that `link`, written
    in docs/<page_src>, names; None for any other link."""
    if re.match(r"[a-z]+:", link):
        return None
    target = ((REPO / "docs" / page_src).parent / link).resolve()
    if target in STAND_INS:
        return STAND_INS[target]
    if not target.is_relative_to(RESULTS):
        return None
    rel = target.relative_to(RESULTS).as_posix()
    if target.is_dir():
        return f"results/{rel}/index.md" if rel != "." else "results/index.md"
    if target.suffix == ".md":  # a table: shown on its folder's page
        folder = posixpath.dirname(rel)
        return f"results/{folder}/index.md" if folder else "results/index.md"
    return f"results/{rel}"  # a figure or data file, copied beside its folder's page


def on_page_markdown(markdown: str, page, config, files) -> str:
    src = page.file.src_uri

    def swap(m: re.Match) -> str:
        new = site_target(src, m.group(2))
        if new is None:
            return m.group(0)
        rel = posixpath.relpath(new, posixpath.dirname(src) or ".")
        return f"{m.group(1)}{rel}{m.group(3) or ''}{m.group(4)}"

    return LINK.sub(swap, markdown)
