"""The wall clock the sidecar stamps records with: one seam, so a simulation replaces exactly this.

``received_at`` (`shadow.mirror`), a proxy outcome's ``outcome_at`` (`shadow.intake.extract`) and the
minute of a ``drops`` summary (`shadow.drops`) come from `now`. Nothing else reads it: timeouts and
deadlines use ``time.monotonic``, and file names, the API's "not in the future" check and log lines use
the real clock. There is no setting for it (a live sidecar must never be told what time it is); the
demo replaces `now` through `semif_shadow.demo.clock` to write records in past weeks.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

now: Callable[[], float] = time.time
"""Epoch seconds for record timestamps (``time.time`` unless a simulation replaced it)."""
