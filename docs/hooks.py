"""mkdocs hook: add the generated pages (experiments/docs/gen_pages.py) to the build.

They are made from the code and from experiments/results at every build, so the CLI and config
references and the results page cannot drift from what they describe.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from mkdocs.structure.files import File, Files

REPO = Path(__file__).resolve().parents[1]


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
