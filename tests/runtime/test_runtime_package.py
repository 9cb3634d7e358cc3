"""`hrl.runtime`'s public names import."""

from __future__ import annotations


def test_public_names_import():
    import hrl.runtime

    for name in hrl.runtime.__all__:
        assert getattr(hrl.runtime, name) is not None, name
