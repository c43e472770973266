"""The model a server named, beside the one asked for: on capability.json and on a row (`served_model`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import _Model

# What the server's own words say of the model it served, beside the one asked for (--model).
ServedModelVerdict = Literal["same", "differs", "unnamed"]


class ServedModel(_Model):
    """The model the server named, from each chat answer's `model` and from GET /v1/models where that was asked; a
    name equal to --model once a trailing `@<revision>` is left out (two revisions must agree where both are given),
    a local folder equal to its absolute path."""

    asked: str = Field(description="the model name sent (--model)")
    answered: list[str] = Field(
        default_factory=list, description="the distinct `model` names the capability check's chat answers gave"
    )
    listed: list[str] | None = Field(
        default=None, description="the model ids GET /v1/models listed; None where it was not asked or gave no list"
    )
    listed_note: str | None = Field(default=None, description="why GET /v1/models gave no list, where it was asked")
    verdict: ServedModelVerdict = Field(
        description="same: every name given is --model; differs: a name given is another model; unnamed: none given"
    )
    detail: str = Field(description="one line: the names and where they came from")
