"""What gwtools shows of an API key, for your own logs and messages too.

Use it when you print or log anything that may hold a key (a URL, a response, a config)::

    >>> from gwtools.secrets import mask_key, redact
    >>> mask_key("sk_test_51Habcdefabcd")
    'sk_test_…abcd'
    >>> redact("sent with sk_test_51Habcdefabcd")
    'sent with sk_test_…abcd'

``HiddenKey`` (what :func:`hide_key` gives for text) is a key that is the key in every way
but its ``repr``, which is masked: a traceback's locals or a debugger show ``'sk_test_…abcd'``.
"""

from gwtools._errors import HiddenKey, hide_key, mask_key, redact

__all__ = ["HiddenKey", "hide_key", "mask_key", "redact"]

# Tracebacks and help() name them here, where users import them from.
for _obj in (HiddenKey, hide_key, mask_key, redact):
    _obj.__module__ = __name__
del _obj
