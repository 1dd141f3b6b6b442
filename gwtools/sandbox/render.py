"""Internal records -> the served variant's JSON objects (docs/sandbox.md, Conventions)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import orjson

from gwtools.sandbox.clock import iso
from gwtools.sandbox.domain import Record

STATUS_A: Final = {
    "pending": "pending",
    "requires_action": "pending",
    "processing": "pending",
    "authorized": "authorized",
    "succeeded": "captured",
    "failed": "failed",
    "canceled": "cancelled",
    "expired": "expired",
}
STATUS_B: Final = {
    "pending": "requires_action",
    "requires_action": "requires_action",
    "processing": "processing",
    "authorized": "authorized",
    "succeeded": "succeeded",
    "failed": "failed",
    "canceled": "canceled",
    "expired": "canceled",
}
#: the raw status values each variant's payments can take (list filter vocabulary)
PAYMENT_STATUSES: Final = {"A": sorted(set(STATUS_A.values())), "B": sorted(set(STATUS_B.values()))}
REFUND_STATUSES: Final = ("pending", "succeeded", "failed")


def payment_status(rec: Record, variant: str) -> str:
    return (STATUS_A if variant == "A" else STATUS_B)[rec["status"]]


def _iso_or_none(ts: float | None) -> str | None:
    return None if ts is None else iso(ts)


def next_action(rec: Record, base_url: str) -> dict[str, Any] | None:
    if rec["status"] != "requires_action":
        return None
    return {
        "type": "redirect_to_url",
        "redirect_to_url": f"{base_url}/pay/{rec['id']}",
        "return_url": rec["return_url"],
    }


def payment_dict(rec: Record, variant: str, base_url: str) -> dict[str, Any]:
    refunded = rec["captured"] and rec["refunded_amount"] >= rec["amount_captured"] > 0
    if variant == "A":
        err = rec["error"]
        return {
            "id": rec["id"],
            "object": "payment",
            "amount": rec["amount"],
            "currency": rec["currency"].upper(),
            "status": STATUS_A[rec["status"]],
            "description": rec["description"],
            "payment_method": rec["method"],
            "payment_method_details": rec["details"],
            "captured": rec["captured"],
            "captured_at": _iso_or_none(rec["captured_at"]),
            "amount_captured": rec["amount_captured"],
            "refunded": refunded,
            "refunded_amount": rec["refunded_amount"],
            "metadata": rec["metadata"],
            "failure_code": None if err is None else err["code"],
            "failure_message": None if err is None else err["message"],
            "created_at": iso(rec["created"]),
            "updated_at": iso(rec["updated"]),
            "redirect_url": f"{base_url}/pay/{rec['id']}",
            "success_url": rec["success_url"],
            "cancel_url": rec["cancel_url"],
            "expires_at": _iso_or_none(rec["expires_at"]),
        }
    return {
        "id": rec["id"],
        "object": "payment",
        "amount": rec["amount"],
        "amount_captured": rec["amount_captured"],
        "currency": rec["currency"].lower(),
        "status": STATUS_B[rec["status"]],
        "description": rec["description"],
        "payment_method": rec["pm"],
        "payment_method_details": rec["details"],
        "customer": rec["customer"],
        "capture_method": rec["capture_method"],
        "captured": rec["captured"],
        "captured_at": rec["captured_at"],
        "refunded": refunded,
        "refunded_amount": rec["refunded_amount"],
        "metadata": rec["metadata"],
        "receipt_email": rec["receipt_email"],
        "receipt_url": f"{base_url}/receipts/{rec['id']}",
        "client_secret": rec["client_secret"],
        "next_action": next_action(rec, base_url),
        "last_payment_error": rec["error"],
        "created": rec["created"],
        "livemode": rec["livemode"],
    }


def payment(rec: Record, variant: str, base_url: str) -> bytes:
    return orjson.dumps(payment_dict(rec, variant, base_url))


def refund(rec: Record, variant: str) -> bytes:
    if variant == "A":
        return orjson.dumps(
            {
                "id": rec["id"],
                "object": "refund",
                "payment_id": rec["payment_id"],
                "amount": rec["amount"],
                "currency": rec["currency"].upper(),
                "reason": rec["reason"],
                "status": rec["status"],
                "metadata": rec["metadata"],
                "created_at": iso(rec["created"]),
            }
        )
    return orjson.dumps(
        {
            "id": rec["id"],
            "object": "refund",
            "payment_id": rec["payment_id"],
            "amount": rec["amount"],
            "currency": rec["currency"].lower(),
            "reason": rec["reason"],
            "status": rec["status"],
            "metadata": rec["metadata"],
            "created": rec["created"],
            "livemode": rec["livemode"],
        }
    )


def object_json(rec: Record, variant: str, base_url: str) -> bytes:
    """A payment or refund record as the served variant shows it."""
    if rec["id"].startswith("pay_"):
        return payment(rec, variant, base_url)
    return refund(rec, variant)


def event_row(
    ident: str,
    type_: str,
    rec: Mapping[str, Any],
    obj: bytes,
    when: float,
    version: str,
    *,
    rendered: bool = False,
) -> tuple[Record, bytes]:
    """The stored record and the JSON of an event about ``rec`` (whose JSON is ``obj``).

    ``rendered``: ``obj`` is :func:`object_json` of ``rec``. The record then keeps ``rec`` as it
    was (``source``), so that :func:`event_again` can show it in another variant or at
    another address, as the payments and refunds are shown after a restart.
    """
    evrec: Record = {
        "id": ident,
        "account": rec["account"],
        "livemode": rec["livemode"],
        "created": int(when),
        "type": type_,
        "api_version": version,
    }
    if rendered:
        evrec["source"] = dict(rec)
    return evrec, event(ident, type_, when, rec["livemode"], version, obj)


def event_again(evrec: Record, variant: str, base_url: str) -> bytes | None:
    """An event stored by :func:`event_row` with its object rendered for ``variant`` and
    ``base_url``; None for an event whose object does not depend on them."""
    source = evrec.get("source")
    if source is None:
        return None
    return event(
        evrec["id"],
        evrec["type"],
        evrec["created"],
        evrec["livemode"],
        evrec["api_version"],
        object_json(source, variant, base_url),
    )


def event(
    ident: str, type_: str, created: float, livemode: bool, version: str, obj: bytes
) -> bytes:
    """The event envelope (docs/sandbox.md, Events and webhooks); ``obj`` is the object's JSON at that moment."""
    head = orjson.dumps(
        {
            "id": ident,
            "object": "event",
            "type": type_,
            "created": int(created),
            "livemode": livemode,
            "api_version": version,
        }
    )
    return head[:-1] + b',"data":{"object":' + obj + b"}}"


def list_cursor(bodies: list[bytes], has_more: bool, url: str) -> bytes:
    return (
        b'{"object":"list","data":['
        + b",".join(bodies)
        + b'],"has_more":'
        + (b"true" if has_more else b"false")
        + b',"url":'
        + orjson.dumps(url)
        + b"}"
    )


def list_pages(bodies: list[bytes], total: int, page: int, limit: int) -> bytes:
    pages = -(-total // limit)
    return (
        b'{"data":['
        + b",".join(bodies)
        + b'],"meta":'
        + orjson.dumps({"total": total, "page": page, "limit": limit, "totalPages": pages})
        + b"}"
    )
