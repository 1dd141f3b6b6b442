"""Bringing the cache up to date: the plan, the run, the writer and the result.

Internal: :meth:`gwtools.Gateway.sync` is the door, :class:`gwtools.SyncResult` the answer.
"""
