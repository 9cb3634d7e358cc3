"""The landing pages' links and figures: every relative link of README.md and docs/ works where
GitHub shows the Markdown (it names a file of the repository) and in the site (a page of
docs/, or a generated page standing in for the repository file, docs/hooks.py); the README's
headline table is the one its results files give (experiments/docs/readme_headline.py)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", flags=re.S | re.M)


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _links(md: Path) -> list[str]:
    """Relative links of a Markdown file, outside code blocks, without their anchors."""
    text = FENCE.sub("", md.read_text())
    out = []
    for link in LINK.findall(text):
        if re.match(r"[a-z]+:", link) or link.startswith("#"):
            continue
        out.append(link.split("#")[0])
    return [link for link in out if link]


def _pages() -> list[Path]:
    return [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]


def test_every_relative_link_names_a_file_of_the_repository():
    """What GitHub shows: a link resolves against the Markdown file's own folder."""
    dead = [f"{md.relative_to(REPO)}: {link}" for md in _pages() for link in _links(md)
            if not (md.parent / link).exists()]
    assert dead == [], "links that are dead on GitHub:\n" + "\n".join(dead)


def test_every_link_of_the_docs_resolves_in_the_site():
    """In the site a link names a page or file of docs/, or a repository file whose generated
    page stands in for it; `make docs` (mkdocs --strict, in CI) then renders and checks them."""
    pytest.importorskip("mkdocs")
    hooks = _load("hrl_docs_hooks", DOCS / "hooks.py")
    generated = set(hooks._generator().generated_pages(REPO))
    missing, stand_ins = [], 0
    for md in sorted(DOCS.rglob("*.md")):
        src = md.relative_to(DOCS).as_posix()
        for link in _links(md):
            target = hooks.site_target(src, link)
            if target is not None:
                stand_ins += 1
                if target not in generated:
                    missing.append(f"{src}: {link} -> {target} (no such generated page)")
            elif not (md.parent / link).resolve().is_relative_to(DOCS):
                missing.append(f"{src}: {link} (outside docs/, and no page stands in for it)")
    assert missing == [], "links that are dead in the site:\n" + "\n".join(missing)
    assert stand_ins >= 10  # the results and reference links, rewritten for the site


def test_the_rewrite_points_a_results_folder_at_its_generated_page():
    pytest.importorskip("mkdocs")
    hooks = _load("hrl_docs_hooks", DOCS / "hooks.py")

    class Page:
        class file:  # noqa: N801  (mkdocs's attribute name)
            src_uri = "guides/mapping.md"

    text = ("[a](../../experiments/results/mapping/gpu/) [b](../../hrl/config/schema.py#train) "
            "[c](jax-loop.md) [d](../../experiments/results/mapping/heldout/heldout-seed9.md)")
    assert hooks.on_page_markdown(text, Page, None, None) == (
        "[a](../results/mapping/gpu/index.md) [b](../reference/config.md#train) "
        "[c](jax-loop.md) [d](../results/mapping/heldout/index.md)")


def test_the_readme_headline_table_is_the_one_its_results_files_give():
    headline = _load("readme_headline", REPO / "experiments" / "docs" / "readme_headline.py")
    text = (REPO / "README.md").read_text()
    assert headline.updated(text) == text, (
        "README.md's headline table is out of date: python experiments/docs/readme_headline.py")
