"""What a training job prints, read back: its last JSON document.

A training script reports its results as one JSON object at the end of its output (the example's
``--json``), after whatever lines it printed before. The testbed and ``provision run`` both record it.
"""

from __future__ import annotations

import json
import re
from typing import Any


def last_json(text: str) -> dict[str, Any] | None:
    """The last JSON object in ``text`` that starts at the beginning of a line."""
    decoder = json.JSONDecoder()
    for match in reversed(list(re.finditer(r"^\{", text, re.MULTILINE))):
        try:
            document, _ = decoder.raw_decode(text, match.start())
        except ValueError:
            continue
        if isinstance(document, dict):
            return document
    return None
