"""PySpark's noise around gwtools' own calls into it."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator


@contextlib.contextmanager
def quiet_pyspark() -> Iterator[None]:
    """Silence what PySpark warns about itself while gwtools calls it.

    With pandas 3, PySpark warns on starting a session and on every collect that it "does not
    yet fully support pandas >= 3.0.0" and that its own code passes a deprecated ``copy``
    keyword. Nothing a user can act on, and in a notebook it reads as a doubt on the numbers;
    the engine-equivalence tests check what Spark hands over. Only PySpark's own future and
    deprecation warnings are silenced, only inside the block.
    """
    with warnings.catch_warnings():
        for category in (FutureWarning, DeprecationWarning):
            warnings.filterwarnings("ignore", category=category, module=r"pyspark\.")
        yield
