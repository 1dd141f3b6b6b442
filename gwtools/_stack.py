"""Where gwtools' warnings are shown: at the first line outside gwtools, the user's.

Python shows a warning once per line it is shown at, so a warning attributed to a line inside
gwtools (or to the notebook runner's line that runs every cell) would be shown once a session,
whichever cell or call met the problem again.
"""

from __future__ import annotations

import os
import sys
from types import FrameType
from typing import cast

#: gwtools' own folder.
_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def user_stacklevel() -> int:
    """The ``stacklevel`` of the first caller outside gwtools, for a ``warnings.warn`` in the
    function calling this, whichever public entry point (scan_cache, Gateway.scan, read_cache,
    open_source, a dashboard, a sync) led there."""
    level, frame = 1, cast("FrameType | None", sys._getframe(1))  # 1: the one that warns
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        level, frame = level + 1, frame.f_back
    return level
