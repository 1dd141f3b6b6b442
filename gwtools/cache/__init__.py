"""The local Parquet cache and everything that reads it.

- ``_dataset``: the on-disk dataset (one folder per resource, one file per month after
  compaction), staging outside the tree, compaction, quarantine, state, ``read_cache``.
- ``_scan``: lazy DuckDB tables over a cache, local or on a filesystem URL (``scan_cache``).
- ``_export``: streaming a table to CSV or Parquet in batches (``write_table``).
- ``_source``: opening "where the data is" (the gateway's cache, a cache path, a Spark session).

Internal: the public API is re-exported from :mod:`gwtools`.
"""
