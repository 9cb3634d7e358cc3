"""The documentation's generated pages against what they describe (the site itself is built
with warnings as errors by `make docs`, which CI runs)."""

import dataclasses
import importlib.util
import re
from pathlib import Path

import pytest

from hrl.config import RunConfig, agent_config_class
from hrl.config.reference import ALGOS, config_keys, config_reference_markdown

REPO = Path(__file__).resolve().parents[1]


def _gen_pages():
    spec = importlib.util.spec_from_file_location("gen_pages",
                                                  REPO / "experiments/docs/gen_pages.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _schema_keys(cls, prefix=""):
    """Every leaf key of a config dataclass, walked with `dataclasses` (not the reference's
    own source reading)."""
    keys = []
    for f in dataclasses.fields(cls):
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else None
        if dataclasses.is_dataclass(default):
            keys += _schema_keys(type(default), f"{prefix}{f.name}.")
        elif f.name != "agent" or prefix:
            keys.append(prefix + f.name)
    return keys


def test_config_reference_lists_every_schema_key_with_type_and_default():
    page = config_reference_markdown()
    listed = set(re.findall(r"^\| `([^`]+)` \|", page, flags=re.M))
    expected = set(_schema_keys(RunConfig))
    for algo in ALGOS:
        expected |= {f"agent.{k}" for k in _schema_keys(agent_config_class(algo))}
    assert expected - listed == set(), "keys missing from the config reference"
    assert listed - expected == set(), "the reference lists keys the schema does not have"
    rows = config_keys()["run"]
    assert all(r.type for r in rows)


def test_every_run_key_has_a_meaning_in_the_schema_source():
    """Keys of hrl/config/schema.py carry a comment; the reference shows it."""
    missing = [r.key for r in config_keys()["run"] if not r.meaning]
    assert missing == [], f"keys without a comment in hrl/config/schema.py: {missing}"


def test_config_reference_shows_the_comment_and_the_default():
    rows = {r.key: r for r in config_keys()["run"]}
    assert rows["replay.fanout"].meaning == "K of the sum tree"
    assert rows["replay.fanout"].default == 16
    assert rows["train.total_env_steps"].type == "int"


def test_cli_reference_has_every_subcommand():
    page = _gen_pages().cli_markdown()
    for name in ("train", "launch", "profile", "map", "report"):
        assert f"## hrl {name}" in page
    assert "--resume RUN_DIR" in page


def test_results_pages_name_a_command_machine_and_date_for_every_figure():
    pages = _gen_pages().results_pages(REPO)
    figures = [p for p in (REPO / "experiments/results").rglob("*.png")
               if "gpu_logs" not in p.parts]
    assert figures
    for png in figures:
        rel = png.parent.relative_to(REPO / "experiments/results").as_posix()
        page = pages[f"results/{rel}/index.md"]
        section = page.split(f"## {png.stem}\n", 1)[1].split("\n## ", 1)[0]
        assert f"results/{rel}/{png.name}" in pages
        command = re.search(r"- regenerate: (.*)", section).group(1)
        assert "`" in command and "not named" not in command, (png, command)
        assert re.search(r"- date: \d{4}-\d\d-\d\d", section)
        assert re.search(r"- machine: \S", section)


def test_a_new_results_folder_shows_up_without_an_edit(tmp_path):
    gen = _gen_pages()
    folder = tmp_path / "experiments/results/new_thing"
    folder.mkdir(parents=True)
    (folder / "thing.md").write_text("# A new figure\n\nMachine: a test box, 2 cores.\n"
                                     "Regenerate: `python make_thing.py --fast`\n")
    (folder / "thing.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    pages = gen.results_pages(tmp_path)
    assert "[new_thing](new_thing/index.md)" in pages["results/index.md"]
    page = pages["results/new_thing/index.md"]
    assert "- regenerate: `python make_thing.py --fast`" in page
    assert "- machine: a test box, 2 cores" in page
    assert pages["results/new_thing/thing.png"] == b"\x89PNG\r\n\x1a\n"


def test_readme_is_a_short_front_door_whose_paths_exist():
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= 150
    for target in re.findall(r"\]\(([^)#\s]+)", text):
        if not target.startswith("http"):
            assert (REPO / target).exists(), target


@pytest.mark.parametrize("page", sorted((REPO / "docs").rglob("*.md")), ids=lambda p: p.name)
def test_pages_include_only_files_of_the_repo(page):
    """Examples are shown from the files themselves (snippets), and no page points outside."""
    text = page.read_text()
    for included in re.findall(r'--8<-- "([^"]+)"', text):
        assert (REPO / included).is_file(), included
    assert "/work/" not in text and "../shared" not in text


def test_generated_pages_cite_no_file_outside_the_repo():
    gen = _gen_pages()
    pages = {**gen.results_pages(REPO), "reference/cli.md": gen.cli_markdown(),
             "reference/config.md": config_reference_markdown()}
    for name, text in pages.items():
        if isinstance(text, str):
            assert not re.search(r"(?<![\w.])/(work|home|root|tmp)/", text), name


def test_site_check_finds_a_broken_link_and_accepts_good_ones(tmp_path):
    spec = importlib.util.spec_from_file_location("check_site",
                                                  REPO / "experiments/docs/check_site.py")
    check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check)
    (tmp_path / "guide").mkdir()
    (tmp_path / "guide" / "index.html").write_text('<a href="../">home</a><img src="fig.png">')
    (tmp_path / "guide" / "fig.png").write_bytes(b"")
    (tmp_path / "index.html").write_text(
        '<a href="guide/">ok</a><a href="missing/">gone</a><a href="https://x.org">out</a>'
        '<link href="/guide/fig.png"><a href="#top">here</a>')
    broken, checked, external = check.broken_links(tmp_path)
    assert broken == ["index.html -> missing/"]
    assert (checked, external) == (5, 1)
