"""`hrl map`'s output and the held-out validation's predictions on the committed profiles stay
what `data/pinned_outputs.json` holds (`pinned.py` says what is pinned and how to rewrite
it). Seconds are compared to float32's precision: the exploration is evaluated in float32."""

import json
import math

import pinned
import pytest

REL = 1e-5


def _close(got, want, where: str) -> None:
    if isinstance(want, float | int) and not isinstance(want, bool):
        assert isinstance(got, float | int), f"{where}: {got!r} != {want!r}"
        assert math.isclose(got, want, rel_tol=REL, abs_tol=1e-12), \
            f"{where}: {got!r} != {want!r}"
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), f"{where}: {got!r} != {want!r}"
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            _close(g, w, f"{where}[{i}]")
    elif isinstance(want, dict):
        assert isinstance(got, dict) and set(got) == set(want), \
            f"{where}: keys {sorted(got)} != {sorted(want)}"
        for k in want:
            _close(got[k], want[k], f"{where}.{k}")
    else:
        assert got == want, f"{where}: {got!r} != {want!r}"


@pytest.fixture(scope="module")
def want():
    return json.loads(pinned.PINNED.read_text())


# The two reports over seven placements (16807 mappings, the FPGA and GPU models, the
# data-parallel candidates) take a minute or more on 2 cores: the long tier; the gymnasium
# report and the held-out predictions run the same code in make test.
@pytest.mark.parametrize("name", [m[0] if m[0] == "dqn_cartpole_gymnasium" else pytest.param(
    m[0], marks=pytest.mark.long) for m in pinned.MAPS])
def test_hrl_map_outputs_are_pinned(want, name):
    spec = next(m for m in pinned.MAPS if m[0] == name)
    got = json.loads(json.dumps(pinned.map_outputs(*spec)))  # as stored: tuples to lists
    w = want["maps"][name]
    assert got["report"].splitlines() == w["report"].splitlines()
    _close(got["times"], w["times"], f"{name}.times")
    _close(got["ranking"], w["ranking"], f"{name}.ranking")


def test_heldout_predictions_are_pinned(want):
    got = json.loads(json.dumps(pinned.heldout_outputs()))
    _close(got, want["heldout"], "heldout")
