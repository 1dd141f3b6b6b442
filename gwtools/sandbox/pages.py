"""Customer-facing pages: hosted checkout (variant A), 3-D Secure and FPX bank pages, receipts.

Real HTML forms, one URL per payment (``/pay/{id}``): GET shows what the customer must do
next, POST does it and redirects (303) to the merchant's URL. Tests drive them with form POSTs.
"""

from __future__ import annotations

import re
from decimal import Decimal
from html import escape
from typing import Any
from urllib.parse import parse_qsl

from babel.numbers import get_currency_precision
from fastapi import APIRouter, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse

from gwtools.sandbox import domain, errors, params, render
from gwtools.sandbox.fpx import BANKS
from gwtools.sandbox.gateway import Gateway
from gwtools.sandbox.store import get_by_id

router = APIRouter(include_in_schema=False)

STYLE = """body{font-family:system-ui,sans-serif;max-width:34rem;margin:2rem auto;padding:0 1rem}
fieldset{margin:1rem 0}label{display:block;margin:.4rem 0}.err{color:#b00020}
button{margin:.3rem .3rem 0 0;padding:.4rem 1rem}"""


def _page(title: str, body: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{escape(title)}"
        f"</title><style>{STYLE}</style></head><body><h1>{escape(title)}</h1>"
        f"{body}</body></html>",
        status,
    )


def money(amount: int, currency: str) -> str:
    """Minor units in major units with the currency's own digits (Babel's table, as the
    library uses): ``1234 MYR`` -> ``12.34 MYR``, ``100 JPY`` -> ``100 JPY``."""
    code = currency.upper()
    digits = int(get_currency_precision(code))
    return f"{Decimal(amount).scaleb(-digits):,.{digits}f} {code}"


def _summary(rec: dict[str, Any]) -> str:
    amount = escape(money(rec["amount"], rec["currency"]))
    desc = f"<p>{escape(rec['description'])}</p>" if rec.get("description") else ""
    return f"<p><strong>{amount}</strong> &middot; <code>{escape(rec['id'])}</code></p>{desc}"


def _checkout_form(rec: dict[str, Any], error: str | None = None) -> str:
    banks = "".join(f"<option value='{c}'>{escape(n)} ({c})</option>" for c, n in BANKS.items())
    err = f"<p class='err'>{escape(error)}</p>" if error else ""
    if rec["currency"].upper() == params.FPX_CURRENCY:
        fpx = f"""<fieldset><legend><label><input type='radio' name='method' value='fpx'> FPX
online banking</label></legend><label>Bank <select name='bank_code'>{banks}</select></label>
</fieldset>"""
    else:  # FPX moves ringgit only
        fpx = "<p>FPX online banking is available for payments in MYR only.</p>"
    return f"""{_summary(rec)}{err}<form method='post'>
<fieldset><legend><label><input type='radio' name='method' value='card' checked> Card</label>
</legend><label>Number <input name='number' autocomplete='cc-number'></label>
<label>Expiry month <input name='exp_month' size='2'></label>
<label>Expiry year <input name='exp_year' size='4'></label>
<label>CVC <input name='cvc' size='4'></label>
<label>Capture <select name='capture_method'><option value='automatic'>automatic</option>
<option value='manual'>manual (authorize only)</option></select></label></fieldset>
{fpx}
<button name='action' value='pay'>Pay</button>
<button name='action' value='cancel'>Cancel</button></form>"""


_BUTTONS = {
    "complete": "Complete",
    "fail": "Fail",
    "cancel": "Cancel",
    "timeout": "Bank does not answer",
}
#: What the one button of a test bank's page leads to (``fpx.TEST_BANKS``).
_TEST_ENDINGS = {
    "complete": "the payment succeeds",
    "fail": "the bank refuses the payment",
    "delayed": "the bank answers 30 s later and the payment succeeds",
    "timeout": "the bank never answers: processing, then failed 30 s later",
    "cancel": "the customer cancels",
}


def _action_form(rec: dict[str, Any]) -> str:
    if rec["stage"] == "3ds":
        what = "3-D Secure: confirm this payment with your card issuer."
    else:
        details = rec["details"] or {}
        what = f"{escape(details.get('bank', 'Your bank'))}: approve the FPX payment."
    ending = domain.test_bank_ending(rec)
    if ending is not None:
        what += f" This test bank's page always ends the same way: {_TEST_ENDINGS[ending]}."
        return f"""{_summary(rec)}<p>{what}</p><form method='post'>
<button name='action' value='complete'>Continue</button></form>"""
    buttons = "\n".join(
        f"<button name='action' value='{a}'>{_BUTTONS[a]}</button>"
        for a in domain.page_actions(rec)
    )
    return f"""{_summary(rec)}<p>{what}</p><form method='post'>
{buttons}</form>"""


def _done(
    rec: dict[str, Any], variant: str, error: str | None = None, status: int = 200
) -> HTMLResponse:
    err = f"<p class='err'>{escape(error)}</p>" if error else ""
    state = render.payment_status(rec, variant)
    return _page(
        "Payment " + state,
        f"{_summary(rec)}{err}<p>This payment is <strong>"
        f"{escape(state)}</strong>; there is nothing more to do here.</p>",
        status,
    )


def _load(request: Request, ident: str) -> tuple[Gateway, Any]:
    gw: Gateway = request.app.state.gateway
    gw.apply_due()
    return gw, get_by_id(gw.store, "payments", ident)


@router.get("/pay/{ident}")
async def show(ident: str, request: Request) -> Response:
    gw, row = _load(request, ident)
    if row is None:
        return _page("Payment not found", f"<p>No payment {escape(ident)}.</p>", 404)
    rec = row.rec
    if rec["status"] == "pending" and rec["stage"] == "checkout":
        return _page("Checkout", _checkout_form(rec))
    if rec["status"] == "requires_action":
        return _page("Authenticate payment", _action_form(rec))
    return _done(rec, gw.variant)


def _target(rec: dict[str, Any], ok: bool) -> str:
    if rec.get("success_url") is not None:  # variant A
        return str(rec["success_url"] if ok else rec["cancel_url"])
    return str(rec["return_url"])


@router.post("/pay/{ident}")
async def act(ident: str, request: Request) -> Response:
    gw, row = _load(request, ident)
    if row is None:
        return _page("Payment not found", f"<p>No payment {escape(ident)}.</p>", 404)
    rec = row.rec
    form = dict(
        parse_qsl((await request.body()).decode("utf-8", "replace"), keep_blank_values=True)
    )
    action = form.get("action", "")
    now = gw.clock.now()
    if rec["status"] == "pending" and rec["stage"] == "checkout":
        if action == "cancel":
            events = domain.checkout_cancel(rec, now)
        elif action == "pay":
            try:
                events = _pay(gw, rec, form, now)
            except errors.ApiError as exc:
                return _page("Checkout", _checkout_form(rec, exc.message), 400)
        else:
            return _page("Checkout", _checkout_form(rec, "Choose Pay or Cancel."), 400)
    elif rec["status"] == "requires_action":
        allowed = domain.page_actions(rec)
        if action not in allowed:
            hint = (
                " A test bank's page ends its own way; use a real bank code to choose the ending."
                if domain.test_bank_ending(rec)
                else ""
            )
            return _page(
                "Authenticate payment",
                f"<p class='err'>Choose one of: {', '.join(allowed)}.{hint}</p>"
                + _action_form(rec),
                400,
            )
        events = domain.customer_action(rec, action, now)
    else:
        return _done(rec, gw.variant, "This payment is no longer waiting for the customer.", 409)
    gw.save_payment(row.rid, rec, events)
    if rec["status"] == "requires_action":
        return RedirectResponse(f"/pay/{ident}", 303)
    return RedirectResponse(_target(rec, rec["status"] not in ("failed", "canceled")), 303)


def _pay(gw: Gateway, rec: dict[str, Any], form: dict[str, str], now: float) -> list[Any]:
    kind = form.get("method", "card")
    capture = form.get("capture_method", "automatic")
    if capture not in ("automatic", "manual"):
        raise errors.invalid("capture_method", "capture_method must be automatic or manual.")
    if kind == "card":
        card: dict[str, Any] = {k: form.get(k, "") for k in ("number", "cvc")}
        for name in ("exp_month", "exp_year"):
            value = form.get(name, "").strip()
            # ASCII digits only: str.isdigit() also passes "²", which int() refuses
            if not re.fullmatch("[0-9]{1,4}", value):
                what = (
                    "expiry month (e.g. 12)" if name == "exp_month" else "expiry year (e.g. 2030)"
                )
                raise errors.invalid(name, f"Enter the card's {what} in digits.")
            card[name] = int(value)
        method = params.card_method(card, rec["livemode"], "card", now)
    elif kind == "fpx":
        params.fpx_currency(rec["currency"])
        if capture == "manual":
            raise errors.invalid("capture_method", "FPX payments are captured at once.")
        method = params.fpx_method({"bank_code": form.get("bank_code", "")}, rec["livemode"], "fpx")
    else:
        raise errors.invalid("method", "Choose card or fpx.")
    rec["capture_method"] = capture
    return domain.attempt(rec, method, now)


@router.get("/receipts/{ident}")
async def receipt(ident: str, request: Request) -> Response:
    gw, row = _load(request, ident)
    if row is None:
        return _page("Receipt not found", f"<p>No payment {escape(ident)}.</p>", 404)
    return _done(row.rec, gw.variant)
