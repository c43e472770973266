"""The typed requests a run is made from, once, at the edge (`cli/requests.py` builds them from the parsed
options): `RunRequest` holds every run option (`RunSettings`), `QualifyRequest` and `CompareRequest` add what to
qualify or compare. Below the edge nothing sees the command line."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ..plan.settings import RunSettings

Adaptation = Literal["silent-audio", "none"]


class RunRequest(BaseModel):
    """One run: every run option, checked by `RunSettings` (a value out of range is a ValidationError of the
    setting's field, which the command line names by its option), and the TRTMC checkout it refers to, if any."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    settings: RunSettings
    trtmc: Path | None = None  # the TRTMC checkout the run refers to (public files name it by placeholder)

    @property
    def out(self) -> Path:
        return self.settings.out

    def server_urls(self) -> list[str]:
        """The URLs of servers the user named (a public file never names a host of theirs that is not loopback)."""
        return []

    def model_dir(self) -> Path | None:
        """A local model folder named by its absolute path (`transformers serve` serves it by that name): public
        files the tool composes name it `$MODEL_DIR`."""
        return None


class QualifyRequest(RunRequest):
    """`trtmc-videoqa qualify`: a TRTMC checkout (`trtmc`), an endpoint, or neither (the self-test)."""

    profiles: list[str] | None = None  # --profile, repeatable; None: every capable checkpoint
    endpoint: str | None = None  # --url (or its alias --endpoint): the server's base URL, without /v1 or a route
    model: str | None = None
    server_records: Path | None = None
    native_url: str | None = None
    server_settings: dict[str, str] = {}  # --server-setting KEY=VALUE, recorded as stated

    @property
    def self_test(self) -> bool:
        """Neither a checkout nor an endpoint: the self-test against the reference endpoint."""
        return not self.trtmc and not self.endpoint

    def server_urls(self) -> list[str]:
        return [url for url in (self.endpoint, self.native_url) if url]

    def model_dir(self) -> Path | None:
        return Path(self.model) if self.model and Path(self.model).is_absolute() else None


class CompareRequest(RunRequest):
    """`trtmc-videoqa compare`: the checkpoint to serve (a hub id or folder, or a TRTMC profile's) and how."""

    checkpoint: str | None = None
    revision: str | None = None
    profile: str | None = None  # the TRTMC profile this stands beside
    device: str = "cuda"
    dtype: str = "auto"
    transformers: Path | None = None
    media_adaptation: Adaptation = "silent-audio"
