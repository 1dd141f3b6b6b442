"""The wire format (gwtools.http._wire): envelopes, page info, variants, ids and paths."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from gwtools.http._wire import (
    MalformedResponseError,
    has_damaged_id,
    malformed_id_reason,
    malformed_ids,
    object_path,
    page_info,
    read_object,
)
from tests.library.test_normalize import b_page, body, pay_b, ts

UTC = "UTC"


# --------------------------------------------------------------------------- page_info


def test_page_info_variant_a() -> None:
    raw = body("sandbox/A/payments_page1.json")
    data = json.loads(raw)
    info = page_info(raw)
    assert (info.variant, info.count, info.has_more) == ("A", 100, None)
    assert (info.total, info.total_pages, info.page, info.limit) == (240, 3, 1, 100)
    assert (info.first_id, info.last_id) == (data["data"][0]["id"], data["data"][-1]["id"])
    assert info.first_created == ts(data["data"][0]["created_at"]).to_pydatetime()
    assert info.last_created == ts(data["data"][-1]["created_at"]).to_pydatetime()


def test_page_info_variant_b_and_unusable_edge_records() -> None:
    raw = body("sandbox/B/payments_page1.json")
    data = json.loads(raw)["data"]
    info = page_info(raw)
    assert (info.variant, info.count, info.has_more, info.total_pages) == ("B", 100, True, None)
    assert info.last_id == data[-1]["id"]
    assert info.first_created == pd.Timestamp(data[0]["created"], unit="s", tz=UTC)
    # The first/last usable record: ids and times skip records that lack them.
    edge = b_page([{"amount": 1}, pay_b(id="x1", created=1767225600),
                   pay_b(id="x2", created=1767225660), {"id": "x3", "created": "junk"}])  # fmt: skip
    info = page_info(edge)
    assert (info.first_id, info.last_id) == ("x1", "x3")
    assert info.first_created == pd.Timestamp(1767225600, unit="s", tz=UTC)
    assert info.last_created == pd.Timestamp(1767225660, unit="s", tz=UTC)
    assert page_info(b_page([])).count == 0


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"<html>502</html>", "not JSON"),
        (b'{"error": {"type": "api_error"}}', "not a list envelope"),
        (b'{"data": [], "other": 1}', "neither `meta` nor"),
        (b"[1, 2]", "not a list envelope"),
    ],
)
def test_page_info_raises_for_bodies_that_are_not_envelopes(raw: bytes, message: str) -> None:
    with pytest.raises(MalformedResponseError, match=message) as exc:
        page_info(raw)
    assert isinstance(exc.value, ValueError)
    assert "body starts" in str(exc.value)


def test_page_info_lists_each_records_id_in_order() -> None:
    page = b_page([pay_b(id="pay_1"), {"amount": 1}, "not an object", pay_b(id=""),
                   {"id": 7, "created": 1}, pay_b(id="pay_2")])  # fmt: skip
    info = page_info(page)
    assert info.ids == ("pay_1", None, None, None, None, "pay_2")
    assert (info.first_id, info.last_id, info.count) == ("pay_1", "pay_2", 6)
    # a record damaged beyond reading gives no id, the others still do
    damaged = b'{"object":"list","has_more":false,"data":[{"id":"pay_1","x":1e400},{"id":"pay_2"}]}'
    assert page_info(damaged).ids[1] == "pay_2"


def test_read_object_tells_the_variant_by_created() -> None:
    b = json.dumps(pay_b()).encode()
    a = json.dumps({"id": "pay_a", "created_at": "2026-01-01T00:00:00Z"}).encode()
    assert read_object(b) == ("B", b)
    assert read_object(a) == ("A", a)
    assert read_object(b'{"id":"pay_x","created":null}')[0] == "B"  # present, even if null
    for bad in (b"[1]", b"<html>", b'"pay_1"'):
        with pytest.raises(ValueError, match="not a JSON object"):
            read_object(bad)


def test_object_path_and_ids() -> None:
    assert object_path("payments", "pay_1Ab") == "payments/pay_1Ab"
    assert object_path("refunds", "rfnd/../x") == "refunds/rfnd%2F..%2Fx"
    assert malformed_id_reason("payments", "pay_1Ab") is None
    assert malformed_id_reason("refunds", "rfnd_9") is None
    for bad in ("pay_", "pay_1-2", "rfnd_1", "pay_1\n"):
        reason = malformed_id_reason("payments", bad)
        assert reason is not None and "'pay_' followed by letters and digits" in reason
    assert not has_damaged_id("payments", b_page([pay_b(id="pay_1Ab")]))
    assert has_damaged_id("payments", b_page([pay_b(id="pay_1\u00e9b")]))
    assert has_damaged_id("payments", b'{"data":[{"id": "pay_1#b"}]}')
    assert not has_damaged_id("refunds", b'{"data":[{"id": "pay_1#b"}]}')


def test_the_vectorised_id_check_agrees_with_the_one_by_one_check() -> None:
    import pyarrow as pa

    ids = ["pay_1Ab", "pay_1\n", "pay_", "rfnd_1", "pay_é", "pay_x y", None]
    mask = malformed_ids("payments", pa.array(ids, pa.large_string())).to_pylist()
    assert mask == [False, True, True, True, True, True, False]
    assert mask[:-1] == [malformed_id_reason("payments", i) is not None for i in ids[:-1]]


@pytest.mark.parametrize(
    "values",
    [
        [1709287201.5, 10**20],  # Arrow refuses such an int beside a float (ArrowInvalid)
        [10**20, 1709287201.5, None],
        [-(2**63) - 1, 1709287201.5],
        ["2024-03-01T10:00:01.5Z", 10**400],  # float() of it raises OverflowError
        [1709287201.5, 10**400, "2024-03-01T10:00:01.5Z"],
    ],
)
def test_ints_beyond_int64_are_bad_times_whatever_they_are_mixed_with(values: list[object]) -> None:
    from gwtools.http._wire import to_timestamps

    arr, bad = to_timestamps(values)
    huge = [i for i, v in enumerate(values) if isinstance(v, int) and abs(v) >= 2**63]
    assert bad == huge
    good = pd.Timestamp("2024-03-01T10:00:01.5", tz=UTC)
    expected = [None if i in huge or v is None else good for i, v in enumerate(values)]
    assert [None if v is None else pd.Timestamp(v) for v in arr.to_pylist()] == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("20260101", "2026-01-01T00:00:00"),  # ISO 8601 basic date, not 1970-08-23 in seconds
        ("1709287201", "2024-03-01T10:00:01"),  # ten digits: Unix seconds
        ("1709287201.5", "2024-03-01T10:00:01.5"),
        ("2024-03-01T10:00:01", "2024-03-01T10:00:01"),  # naive is UTC
    ],
)
def test_digit_strings_are_seconds_except_eight_digits_which_are_a_date(
    text: str, expected: str
) -> None:
    from gwtools.http._wire import to_timestamps

    arr, bad = to_timestamps([text, None])
    assert bad == []
    assert arr.to_pylist() == [pd.Timestamp(expected, tz=UTC), None]


def test_eight_digits_that_are_no_date_are_bad_not_seconds_of_1970() -> None:
    from gwtools.http._wire import to_timestamps

    arr, bad = to_timestamps(["12345678", "20261301", " 20260315 ", "2024-03-01T10:00:01Z"])
    assert bad == [0, 1, 2]
    assert arr.to_pylist()[:3] == [None, None, None]


@pytest.mark.parametrize(
    "values",
    [
        # nanoseconds (a common mistake) beside Unix seconds with a fraction: an int of int64
        # that a double cannot hold exactly is refused by Arrow beside a float (ArrowInvalid)
        [1767225600000000000, 1709287201.5],
        [1709287201.5, 2**53 + 1, None],
        [-(2**62), 1709287201.5],
    ],
)
def test_big_int64_times_beside_floats_are_bad_not_an_error(values: list[object]) -> None:
    from gwtools.http._wire import to_timestamps

    arr, bad = to_timestamps(values)
    big = [i for i, v in enumerate(values) if isinstance(v, int)]
    assert bad == big
    good = pd.Timestamp("2024-03-01T10:00:01.5", tz=UTC)
    expected = [None if i in big or v is None else good for i, v in enumerate(values)]
    assert [None if v is None else pd.Timestamp(v) for v in arr.to_pylist()] == expected


@pytest.mark.parametrize("fast", [True, False])
def test_a_creation_time_in_nanoseconds_beside_fractional_seconds_is_rejected(fast: bool) -> None:
    from gwtools.normalize._normalize import _normalize_bodies

    page = b_page([pay_b(id="pay_1", created=1767225600 * 10**9),
                   pay_b(id="pay_2", created=1767225600.5, captured_at=1767225600 * 10**9)])  # fmt: skip
    batch = _normalize_bodies("payments", [page], False, fast=fast)
    assert batch.frame["id"].tolist() == ["pay_2"]
    assert batch.frame["created_at"].tolist() == [pd.Timestamp("2026-01-01T00:00:00.5", tz=UTC)]
    assert json.loads(batch.frame["extra"][0]) == {"captured_at": 1767225600 * 10**9}
    assert len(batch.rejects) == 1 and "`created` = 1767225600000000000" in batch.rejects[0].reason


# .NET's DateTime.MinValue/MaxValue written with a local offset, and signed years: ISO 8601 text
# whose UTC time falls outside the years 1 to 9999, the range of a timestamp column (and of
# Python's datetime), as Unix seconds outside it are already.
OUT_OF_RANGE = [
    "0001-01-01T00:00:00+08:00",
    "9999-12-31T23:59:59-05:00",
    "-0001-01-01T00:00:00Z",
]


@pytest.mark.parametrize("text", OUT_OF_RANGE)
def test_iso_times_outside_the_years_1_to_9999_in_utc_are_bad(text: str) -> None:
    from gwtools.http._wire import to_timestamps

    for values in ([text], [text, "2026-01-01T00:00:00"], [text, 1767225600]):
        arr, bad = to_timestamps(values)
        assert bad == [0]
        assert arr[0].as_py() is None
    # the edges themselves, in UTC, are in range
    arr, bad = to_timestamps(["0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999Z"])
    assert bad == [] and arr.to_pylist()[1] == pd.Timestamp("9999-12-31T23:59:59.999999", tz=UTC)


@pytest.mark.parametrize("text", OUT_OF_RANGE)
def test_a_page_with_an_out_of_range_iso_time_is_read_not_raised_on(text: str) -> None:
    from gwtools.normalize._normalize import _normalize_bodies

    page = b_page([pay_b(id="pay_1", created=text), pay_b(id="pay_2", captured_at=text)])
    info = page_info(page)
    assert (info.first_created, info.last_created) == (
        pd.Timestamp(1767225600, unit="s", tz=UTC),
    ) * 2
    for fast in (True, False):
        batch = _normalize_bodies("payments", [page], False, fast=fast)
        assert batch.frame["id"].tolist() == ["pay_2"]
        assert pd.isna(batch.frame["captured_at"][0])
        assert json.loads(batch.frame["extra"][0]) == {"captured_at": text}
        assert len(batch.rejects) == 1 and f"`created` = '{text}'" in batch.rejects[0].reason
        if not text.startswith("-"):  # (a signed year is no ISO 8601 Python reads)
            assert batch.rejects[0].reason.endswith("outside the years 1 to 9999 in UTC")
