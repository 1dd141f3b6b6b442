"""The description limit (255 characters, both variants): the error names the limit and the
length received."""

from __future__ import annotations

from tests.sandbox.conftest import Payer, error_of


def test_description_limit_error_says_limit_and_length(payer: Payer) -> None:
    assert payer.create(description="\u00e9" * 255, expect=201).json()["description"] == (
        "\u00e9" * 255
    )
    r = payer.create(description="x" * 300, expect=400)
    err = error_of(r)
    assert (err["type"], err["code"], err["param"]) == (
        "invalid_request_error",
        "parameter_invalid",
        "description",
    )
    assert "300 characters" in err["message"] and "maximum is 255" in err["message"]
