"""Kubernetes resource quantities (`500m`, `2Gi`, `1.5`) as numbers, for config-time quota arithmetic."""

from __future__ import annotations

import re

_SUFFIX = {
    "": 1.0,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "Ki": 2.0**10,
    "Mi": 2.0**20,
    "Gi": 2.0**30,
    "Ti": 2.0**40,
}
_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(m|k|M|G|T|Ki|Mi|Gi|Ti)?$")


def parse_quantity(text: str) -> float:
    """`"2Gi"` -> 2147483648.0; raises ValueError for anything Kubernetes would not accept here."""
    match = _QUANTITY.match(text)
    if not match:
        raise ValueError(f"'{text}' is not a Kubernetes quantity")
    return float(match.group(1)) * _SUFFIX[match.group(2) or ""]
