"""The reference workload that tells how fast the machine runs now against its profile."""

import pytest

from hrl.mapping.speed import PARTS, profile_reference, reference_time, speed_scale


def test_reference_time_sums_its_parts():
    got = reference_time(repeats=2)
    assert all(got[p] > 0 for p in PARTS)
    assert got["seconds"] == pytest.approx(sum(got[p] for p in PARTS))
    with pytest.raises(ValueError, match="repeats must be >= 1, got 0"):
        reference_time(repeats=0)


def test_speed_scale_is_now_over_the_profile_s_median():
    samples = [{"seconds": 2.0}, {"seconds": 4.0}, {"seconds": 3.0}]
    assert profile_reference(samples) == 3.0
    assert speed_scale(3.3, samples) == pytest.approx(1.1)
    assert speed_scale(1.5, samples) == pytest.approx(0.5)
    # a profile taken before there was a reference: no calibration
    assert profile_reference([]) is None and speed_scale(3.0, None) is None
    with pytest.raises(ValueError, match="reference seconds must be > 0, got now 0.0"):
        speed_scale(0.0, samples)



def test_a_speed_check_reads_the_median_of_several_readings(monkeypatch):
    """One stray reading of the reference (a machine at the profile's speed, read once 40%
    fast) neither scales the predictions nor warns: the check compares the median of
    CHECK_SAMPLES readings. A machine slow in every reading is still scaled."""
    from hrl.mapping import speed

    profile = {"speed_reference": [{"seconds": 0.030}, {"seconds": 0.030}]}
    readings = iter([0.018] + [0.030] * (speed.CHECK_SAMPLES - 1))
    monkeypatch.setattr(speed, "reference_time", lambda: {"seconds": next(readings)})
    assert speed.speed_check(profile) == (1.0, None)
    with pytest.raises(StopIteration):  # every reading was taken
        next(readings)
    monkeypatch.setattr(speed, "reference_time", lambda: {"seconds": 0.060})
    scale, warning = speed.speed_check(profile)
    assert scale == pytest.approx(2.0) and "2.00x slower" in warning
    with pytest.raises(ValueError, match="samples must be >= 1, got 0"):
        speed.reference_now(0)
