"""Fixtures shared by the test modules (plain helper functions are in helpers.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from media_clips import Clips, build_clips

from trtmc_videoqa.reference import ReferenceConfig, ReferenceServer


@pytest.fixture(scope="session")
def clips(tmp_path_factory: pytest.TempPathFactory) -> Clips:
    """Every small media test clip (media_clips.py says what they show), made once per session."""
    return build_clips(tmp_path_factory.mktemp("media-clips"))


@pytest.fixture(scope="module")
def server() -> Iterator[ReferenceServer]:
    """The reference endpoint with its defaults, in this process on a free loopback port, one per test module."""
    with ReferenceServer(ReferenceConfig()) as running:
        yield running
