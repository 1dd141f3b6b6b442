"""``gwtools.cache._export.write_table``: what lands in the file, and what does not."""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from gwtools.cache._export import write_table


def test_frame_attrs_stay_out_of_exported_parquet(tmp_path: Path) -> None:
    """A monitor's result carries Timestamps in ``attrs``; pyarrow would warn (naming a library
    path) that it cannot encode them. The rows are exported, the in-memory attrs are not."""
    frame = pd.DataFrame({"kind": ["card_testing", "refund_spike"], "n": [419, 12]})
    frame.attrs["window"] = (pd.Timestamp("2026-11-13", tz="UTC"), pd.Timestamp("2026-11-20"))
    out = tmp_path / "alerts.parquet"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert write_table(frame, out, "parquet", rows=1) == 2
    back = pq.read_table(out)
    assert back.to_pandas().equals(frame)
    assert b"window" not in (back.schema.metadata or {}).get(b"pandas", b"")
    assert "window" in frame.attrs  # the caller's frame keeps its attrs
