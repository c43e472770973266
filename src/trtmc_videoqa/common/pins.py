"""The one pin file (``containers/pins.toml``) and the versions recorded as provenance."""

from __future__ import annotations

import os
import sys
import tomllib
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from pydantic import BaseModel, ConfigDict

PIN_FILE_NAME = "pins.toml"
PIN_FILE_ENV = "TRTMC_VIDEOQA_PINS"  # set by the container recipes, which copy the pin file in


class _Pin(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TrtmcPin(_Pin):
    repository: str
    commit: str
    research_commit: str = ""


class PackagePin(_Pin):
    package: str
    version: str

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


class ImagePin(_Pin):
    base: str
    digest: str = ""
    python: str

    @property
    def pinned(self) -> bool:
        return self.digest.startswith("sha256:")

    @property
    def reference(self) -> str:
        """The image reference to pull: by digest when one is known, else the tag."""
        return f"{self.base}@{self.digest}" if self.pinned else self.base

    @property
    def provenance(self) -> str:
        return self.reference if self.pinned else f"{self.base} (unpinned)"


class DaggerPin(_Pin):
    engine: str
    sdk: str


class Pins(_Pin):
    trtmc: TrtmcPin
    aiperf: PackagePin
    images: dict[str, ImagePin]
    dagger: DaggerPin


def default_pin_file() -> Path:
    """``$TRTMC_VIDEOQA_PINS``, else ``containers/pins.toml`` of the source tree this package came from."""
    if os.environ.get(PIN_FILE_ENV):
        return Path(os.environ[PIN_FILE_ENV])
    here = Path(__file__).resolve()
    for parent in here.parents:
        candidate = parent / "containers" / PIN_FILE_NAME
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(
        f"containers/{PIN_FILE_NAME} not found above {here}; install the package from its source tree"
    )


@lru_cache(maxsize=4)
def load_pins(path: Path | None = None) -> Pins:
    pin_file = path or default_pin_file()
    with pin_file.open("rb") as handle:
        return Pins.model_validate(tomllib.load(handle))


def package_version(name: str) -> str | None:
    """The installed version from package metadata, or None when the package is absent."""
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def tool_versions() -> dict[str, str | None]:
    """Versions of everything that shapes a measurement, for provenance."""
    versions: dict[str, str | None] = {"python": sys.version.split()[0]}
    for name in ("trtmc-videoqa", "aiperf", "av", "pydantic", "httpx", "fastapi", "uvicorn"):
        versions[name] = package_version(name)
    return versions
