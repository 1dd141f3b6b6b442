"""PySpark's noise around gwtools' own calls into it."""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import warnings
from collections.abc import Iterator

from gwtools._errors import GatewayError


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


#: The loggers PySpark 4 writes each captured query error to (as JSON, with the Java stack).
_ERROR_LOGGERS = ("DataFrameQueryContextLogger", "SQLQueryContextLogger")


class _Held(logging.Filter):
    """Holds back the records logged on one thread."""

    def __init__(self) -> None:
        super().__init__()
        self.thread = threading.get_ident()
        self.records: list[logging.LogRecord] = []

    def filter(self, record: logging.LogRecord) -> bool:
        if record.thread != self.thread:
            return True
        self.records.append(record)
        return False


@contextlib.contextmanager
def spark_errors_explained() -> Iterator[None]:
    """Hold back PySpark's log of a query error until it is known whether gwtools explains it.

    PySpark 4 logs every AnalysisException the moment it is raised: some 9 KB of JSON with the
    Java stack on the notebook's stderr, above the ConfigurationError gwtools raises instead
    (a column the table lacks, named). A block ending in a gwtools error drops the records;
    any other end lets them through as PySpark wrote them.
    """
    if "pyspark" not in sys.modules:  # no Spark table can be involved
        yield
        return
    try:
        from pyspark.logger import PySparkLogger  # PySpark 4; 3.x logs nothing of the kind
    except ImportError:
        yield
        return
    # PySparkLogger's getLogger: a plain logging.getLogger would make a Logger that the
    # structured calls PySpark makes later fail on.
    loggers = [PySparkLogger.getLogger(name) for name in _ERROR_LOGGERS]
    held = _Held()
    for logger in loggers:
        logger.addFilter(held)
    explained = False
    try:
        yield
    except GatewayError:
        explained = True
        raise
    finally:
        for logger in loggers:
            logger.removeFilter(held)
        if not explained:
            for record in held.records:
                logging.getLogger(record.name).handle(record)
