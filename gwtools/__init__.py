"""gwtools: a payment gateway's payments and refunds in pandas, a Parquet cache and notebooks.

Example::

    import gwtools

    gw = gwtools.connect()          # no key, no base URL: the embedded sandbox
    payments = gw.payments()        # syncs, then reads the local Parquet cache
    refunds = gw.refunds(refresh=False)
"""

from gwtools._schema import empty_payments, empty_refunds

__all__ = ["empty_payments", "empty_refunds"]
