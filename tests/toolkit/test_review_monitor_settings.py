"""MonitorSettings and monitor()'s windows given values a notebook might type: a negative or
above-one probability, a share of 1.5, a count of 2.5 or 0, text, NumPy numbers.

A value outside its range is refused when the settings are made, naming the field and its
range: monitor(settings=MonitorSettings(false_alarm=-0.1)) once never returned at all, and
spike_ratio='2' failed deep inside. NumPy numbers are numbers (days=np.int64(7) was refused).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from gwtools import ConfigurationError
from gwtools import analysis as a
from tests.toolkit.conftest import build_payments, build_refunds

BAD: list[tuple[str, Any, str]] = [
    ("false_alarm", -0.1, "above 0 and below 1"),
    ("false_alarm", 0, "above 0 and below 1"),
    ("false_alarm", 1.5, "above 0 and below 1"),
    ("spike_ratio", -1, "above 0"),
    ("spike_ratio", "2", "above 0"),
    ("refund_ratio", float("nan"), "above 0"),
    ("small_amount", -2, "0 or more"),
    ("testing_min_distinct_share", 1.5, "from 0 to 1"),
    ("testing_min_declined_share", -0.5, "from 0 to 1"),
    ("refund_warmup_days", float("inf"), "0 or more"),
    ("spike_min_declines", 2.5, "whole number of at least 1"),
    ("testing_min_attempts", 0, "whole number of at least 1"),
    ("outage_timeout_run", True, "whole number of at least 1"),
    ("refund_min", "5", "whole number of at least 1"),
    ("min_baseline", -1, "whole number of at least 0"),
]


@pytest.mark.parametrize(("field", "value", "accepted"), BAD, ids=[f"{f}={v!r}" for f, v, _ in BAD])
def test_a_setting_out_of_its_range_is_refused_naming_it(
    field: str, value: Any, accepted: str
) -> None:
    with pytest.raises(ConfigurationError) as info:
        a.MonitorSettings(**{field: value})
    assert info.value.param == field
    message = str(info.value)
    assert field in message and repr(value) in message and accepted in message


def test_numpy_numbers_are_numbers() -> None:
    settings = a.MonitorSettings(false_alarm=np.float64(0.05), spike_min_declines=np.int64(3))
    assert settings.spike_min_declines == 3
    payments = build_payments(
        [{"status": "failed", "amount": 500, "created_at": f"2026-11-{d:02d}T02:00:00Z"}
         for d in range(1, 15)]
    )  # fmt: skip
    refunds = build_refunds([])
    days = dict(until="2026-11-14", settings=settings)
    want = a.monitor(payments, refunds, days=7, baseline_days=7, **days)
    got = a.monitor(payments, refunds, days=np.int64(7), baseline_days=np.float64(7), **days)
    pd.testing.assert_frame_equal(got, want)
