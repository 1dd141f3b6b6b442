"""Schemathesis against the OpenAPI document each variant serves, over real HTTP.

For every ``/v1/`` operation it sends generated requests, valid and invalid, with a fresh
account's secret key, and requires: no 500, a documented status code and content type, and a
body that matches the documented schema. The ``/_sandbox/`` admin API is not part of the
gateway's interface and is not in the document.

Bounded (``MAX_EXAMPLES`` per operation and mode, no deadline) to stay near a minute on one
core. To dig into a failure, raise it: ``GW_SCHEMATHESIS_EXAMPLES=200 pytest <this file>``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode, checks

from gwtools.sandbox import Sandbox

MAX_EXAMPLES = int(os.environ.get("GW_SCHEMATHESIS_EXAMPLES", "25"))
CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_schema_conformance,
    checks.response_headers_conformance,
]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def rate_limits_off(sandbox_a: Sandbox, sandbox_b: Sandbox) -> Iterator[None]:
    """Generated requests come faster than the spec's 100/s: lift the limits, then restore them."""
    before = {}
    for sb in (sandbox_a, sandbox_b):
        before[sb.base_url] = httpx.get(f"{sb.base_url}/_sandbox/rate_limits").json()
        r = httpx.put(f"{sb.base_url}/_sandbox/rate_limits", json={"enabled": False})
        r.raise_for_status()
    try:
        yield
    finally:
        for base_url, settings_before in before.items():
            httpx.put(f"{base_url}/_sandbox/rate_limits", json=settings_before).raise_for_status()


def _schema(sb: Sandbox) -> Any:
    r = httpx.post(f"{sb.base_url}/_sandbox/accounts", timeout=10)
    r.raise_for_status()
    schema = schemathesis.openapi.from_url(f"{sb.base_url}/openapi.json")
    schema.config.update(
        base_url=sb.base_url,
        headers={"Authorization": f"Bearer {r.json()['secret_key']}"},
    )
    schema.config.generation.update(
        modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE],
        max_examples=MAX_EXAMPLES,
        database="none",
    )
    return schema.include(path_regex=r"^/v1/")


@pytest.fixture(scope="module")
def schema_a(sandbox_a: Sandbox, rate_limits_off: None) -> Any:
    return _schema(sandbox_a)


@pytest.fixture(scope="module")
def schema_b(sandbox_b: Sandbox, rate_limits_off: None) -> Any:
    return _schema(sandbox_b)


lazy_a = schemathesis.pytest.from_fixture("schema_a")
lazy_b = schemathesis.pytest.from_fixture("schema_b")


@lazy_a.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_variant_a_conforms_to_its_openapi(case: schemathesis.Case) -> None:
    case.call_and_validate(checks=CHECKS)


@lazy_b.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_variant_b_conforms_to_its_openapi(case: schemathesis.Case) -> None:
    case.call_and_validate(checks=CHECKS)


@pytest.mark.parametrize("variant", ["A", "B"])
def test_the_document_covers_the_gateway_interface(
    variant: str, request: pytest.FixtureRequest
) -> None:
    """Guards the run above against vacuity: the document lists every endpoint of the spec."""
    sb: Sandbox = request.getfixturevalue(f"sandbox_{variant.lower()}")
    doc = httpx.get(f"{sb.base_url}/openapi.json").json()
    # Path parameters are compared by position, whatever their names.
    operations = {
        (method.upper(), re.sub(r"\{[^}]+\}", "{id}", path))
        for path, item in doc["paths"].items()
        for method in item
        if method in {"get", "post", "put", "patch", "delete"}
    }
    expected = {
        ("POST", "/v1/payments"),
        ("GET", "/v1/payments"),
        ("GET", "/v1/payments/{id}"),
        ("POST", "/v1/payments/{id}/capture"),
        ("POST", "/v1/payments/{id}/void"),
        ("POST", "/v1/refunds"),
        ("GET", "/v1/refunds"),
        ("GET", "/v1/refunds/{id}"),
        ("GET", "/v1/events"),
    }
    missing = expected - operations
    assert not missing, f"operations missing from variant {variant}'s OpenAPI document: {missing}"
    assert not any(path.startswith("/_sandbox") for _, path in operations)


@pytest.mark.parametrize("variant", ["A", "B"])
def test_generated_requests_are_authenticated(variant: str, request: pytest.FixtureRequest) -> None:
    """Guards against a vacuous run: with a lost key every answer would be a documented 401."""
    operation = request.getfixturevalue(f"schema_{variant.lower()}")["/v1/payments"]["GET"]
    statuses: list[int] = []

    @given(case=operation.as_strategy(generation_mode=GenerationMode.POSITIVE))
    @settings(max_examples=5, deadline=None, database=None)
    def call(case: schemathesis.Case) -> None:
        statuses.append(case.call().status_code)

    call()
    assert statuses
    assert 401 not in statuses


@pytest.mark.parametrize("variant", ["A", "B"])
def test_stateful_sequences_follow_the_links(variant: str, request: pytest.FixtureRequest) -> None:
    """Create, then retrieve, capture, void and refund what was created, through the links."""
    schema = request.getfixturevalue(f"schema_{variant.lower()}")
    sb: Sandbox = request.getfixturevalue(f"sandbox_{variant.lower()}")
    accounts: list[str] = []
    sent: set[str] = set()
    configured = schema.config.headers["Authorization"]

    class Machine(schema.as_state_machine()):  # type: ignore[misc]
        def setup(self) -> None:
            # Each scenario on a fresh, empty account. Which links Schemathesis can follow next
            # depends on what the responses hold (an id at data/0/id of a list, a 201 or a 409);
            # on one shared account, payments left by earlier scenarios made the same choices
            # meet different responses, and Hypothesis stopped the run with
            # FlakyStrategyDefinition ("a flaky precondition, or a bundle that was unexpectedly
            # empty") whenever a new scenario began like an earlier one.
            r = httpx.post(f"{sb.base_url}/_sandbox/accounts", timeout=10)
            r.raise_for_status()
            self.auth = f"Bearer {r.json()['secret_key']}"
            accounts.append(self.auth)

        def get_call_kwargs(self, case: schemathesis.Case) -> dict[str, Any]:
            # the configured key becomes the scenario's; a generated one is sent as generated
            headers: dict[str, Any] = dict(case.headers or {})
            if headers.get("Authorization") != configured:
                return {}
            return {"headers": {"Authorization": self.auth}}

        def after_call(self, response: Any, case: schemathesis.Case) -> None:
            super().after_call(response, case)
            sent.add(response.request.headers.get("Authorization", ""))

        def validate_response(self, response: Any, case: schemathesis.Case, **kwargs: Any) -> None:
            case.validate_response(response, checks=CHECKS, transport_kwargs=kwargs)

    Machine.run(
        settings=settings(
            max_examples=MAX_EXAMPLES,
            stateful_step_count=6,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
        )
    )
    # Guards against a vacuous change: the calls did use the scenarios' own accounts.
    assert len(sent & set(accounts)) > 1 and configured not in sent
