"""gwtools.sandbox: a local, stateful payment gateway speaking the spec, in variant A or B.

Use it as the embedded data source of the demo, the notebooks and the tests::

    from gwtools.sandbox import Sandbox

    with Sandbox("B", seed_payments=1000, days=30) as sb:
        print(sb.base_url, sb.secret_key)

``create_app`` gives the bare ASGI app (for ``httpx.ASGITransport``); ``generate_history``
seeds a deterministic history. The admin API under ``/_sandbox/`` is described in
docs/sandbox.md.
"""

from gwtools.sandbox.app import create_app
from gwtools.sandbox.gateway import Gateway
from gwtools.sandbox.history import generate_history
from gwtools.sandbox.server import Sandbox

__all__ = ["Gateway", "Sandbox", "create_app", "generate_history"]
