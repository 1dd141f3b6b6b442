"""Records to canonical tables: the record shapes, decoding, and normalisation.

- ``_decode``: one msgspec Struct per record shape, the single declaration that decoding, the
  canonical columns and the ``extra`` column derive from.
- ``_normalize``: list bodies of either variant (and retrieved single objects, objects held as
  dicts) to one canonical Arrow/pandas table per resource, with rejects for records that
  cannot be normalised.

Internal: :func:`gwtools.normalize_payments` and :func:`gwtools.normalize_refunds` are public.
"""
