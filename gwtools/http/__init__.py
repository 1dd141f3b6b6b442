"""Talking to the gateway: HTTP requests, the wire format of both variants, and paging.

The first stage of the data path (HTTP -> wire -> pages -> records -> cache -> analysis):

- ``_client``: the async HTTP client: authentication, rate limit, retries, error mapping.
- ``_wire``: everything about the gateway's bodies: list envelopes, page info, variant
  detection, id formats and object paths. Nothing else in gwtools knows the wire format.
- ``_paging``: the paging strategies (A's page numbers, B's cursors) behind one loop.

Internal: the public API is re-exported from :mod:`gwtools`.
"""
