"""Root conftest: registers the secret scan (``tests/_secret_scan.py``) for every pytest run here.

The plugin lives with the tests, not in the installed package (it imports pytest). Registering
it here rather than with ``-p`` in ``addopts`` works for ``pytest`` as well as
``python -m pytest``, and for runs of ``notebooks/`` alone: pytest puts this folder on
``sys.path`` before importing it.
"""

pytest_plugins = ["tests._secret_scan"]
