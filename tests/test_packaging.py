"""The kit's packaging: environment.yml in step with pyproject, the public API importable."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[ ;]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _pyproject_requirements() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = {_name(r): r for r in project["dependencies"]}
    for extra in ("hw", "bench", "dev", "docs", "wandb"):
        reqs.update({_name(r): r for r in project["optional-dependencies"][extra]})
    return reqs


def _environment_requirements() -> tuple[set[str], set[str]]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert env["channels"] == ["conda-forge"]
    conda, pip = set(), set()
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            pip |= {_name(d) for d in dep["pip"]}
        else:
            conda.add(_name(dep))
    return conda, pip


def test_environment_yml_lists_every_pyproject_dependency():
    conda, pip = _environment_requirements()
    missing = sorted(set(_pyproject_requirements()) - conda - pip)
    assert not missing, f"add to environment.yml: {missing}"


def test_environment_yml_has_the_system_tools_setup_installs():
    conda, _ = _environment_requirements()
    makefile = (ROOT / "Makefile").read_text()
    apt = re.search(r"^APT_PACKAGES := (.*)$", makefile, re.M).group(1).split()
    conda_name = {"pocl-opencl-icd": "pocl", "ocl-icd-libopencl1": "pocl"}
    for package in apt:
        assert conda_name.get(package, package) in conda, package


def test_version_bounds_agree():
    conda, _ = _environment_requirements()
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pins = {}
    for dep in env["dependencies"]:
        for item in dep["pip"] if isinstance(dep, dict) else [dep]:
            pins[_name(item)] = item[len(_name(item)) :].strip()
    for name, requirement in _pyproject_requirements().items():
        bounds = requirement[len(name) :].strip()
        if bounds.startswith("["):
            bounds = bounds[bounds.index("]") + 1 :]
        if bounds and pins.get(name):
            assert pins[name] == bounds, (
                f"{name}: pyproject {bounds!r} vs environment {pins[name]!r}"
            )


def test_public_replay_api_imports():
    import hrl.replay as replay

    for name in replay.__all__:
        assert getattr(replay, name) is not None, name
