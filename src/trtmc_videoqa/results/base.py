"""The base of every artifact schema: unknown fields are refused, and so is a number no JSON reader holds."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class _Model(BaseModel):
    # NaN and infinities are no JSON numbers: a file holding one (a hand-made row, a damaged one) is refused with
    # the field named, where a report would otherwise draw or sort by it (issue: `report` looping on Infinity).
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
