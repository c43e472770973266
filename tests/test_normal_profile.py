"""One normal full-model profile per checkpoint@revision: the fixtures' checkpoints, and each step of the rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from trtmc_videoqa.inventory import run_inventory
from trtmc_videoqa.inventory.normal_profile import (
    NO_FULL_MODEL,
    choose_normal_profiles,
    parallel_ranks,
    profile_gaps,
    with_normal_profiles,
)
from trtmc_videoqa.results import CheckpointEntry, Inventory

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def families() -> Inventory:
    return run_inventory(FIXTURES / "trtmc_families")


@pytest.fixture(scope="module")
def e2e() -> Inventory:
    return run_inventory(FIXTURES / "trtmc_e2e")


def _entry(
    profile: str, *, checkpoint: str | None = "example/M", revision: str | None = "r1", **extra
) -> CheckpointEntry:
    fields = {
        "family": "fam",
        "manifest": f"families/fam/tests/manifests/{profile}.json",
        "checkpoint": checkpoint,
        "revision": revision,
        "catalog_status": "ready",
        "in_group": True,
        "group_reason": "visual input",
        "verdict": "temporal-video-qa",
    }
    return CheckpointEntry(profile=profile, **(fields | extra))


def _normal(entries: list[CheckpointEntry]) -> list[str]:
    chosen = choose_normal_profiles(entries)
    return [entry.profile for entry in entries if chosen[entry.manifest]]


def test_the_fixture_checkpoint_has_one_normal_profile(families: Inventory) -> None:
    rows = {e.profile: e for e in families.entries if e.checkpoint == "example/VidQA-2B"}
    assert sorted(rows) == ["vidqa-2b", "vidqa-2b-fp8", "vidqa-2b-native", "vidqa-2b-tp2"]
    assert {p for p, e in rows.items() if e.normal_profile} == {"vidqa-2b"}
    assert rows["vidqa-2b-fp8"].variant_kinds == ["quantized"] and not rows["vidqa-2b-fp8"].normal_profile
    assert rows["vidqa-2b-native"].variant_kinds == [] and not rows["vidqa-2b-native"].normal_profile
    assert not rows["vidqa-2b-tp2"].normal_profile
    assert all(e.profile_gap is None for e in rows.values())


def test_every_readable_checkpoint_with_a_full_model_profile_has_exactly_one(
    families: Inventory, e2e: Inventory
) -> None:
    for inventory in (families, e2e):
        groups: dict[object, int] = {}
        for e in inventory.entries:
            if e.verdict != "invalid" and e.profile_gap is None:
                key = (e.checkpoint, e.revision) if e.checkpoint else e.profile
                groups[key] = groups.get(key, 0) + e.normal_profile
        assert set(groups.values()) == {1}, groups
        assert not any(e.normal_profile for e in inventory.entries if e.verdict == "invalid")


def test_a_checkpoint_with_only_smoke_profiles_has_a_profile_gap(e2e: Inventory) -> None:
    rows = {e.profile: e for e in e2e.entries}
    for profile in ("olddiff-video-l0", "oldlm-tiny-random"):
        assert rows[profile].profile_gap == NO_FULL_MODEL and not rows[profile].normal_profile
    assert rows["oldvl-2b"].normal_profile and not rows["oldvl-2b-tp2"].normal_profile
    assert rows["oldsam-local"].normal_profile  # no checkpoint: its own group, and local-only is no smoke kind
    assert rows["oldlm-bad"].profile_gap is None and not rows["oldlm-bad"].normal_profile  # invalid: no group


def test_rule_1_a_capable_verdict_first() -> None:
    entries = [_entry("m", verdict="partial"), _entry("m-x", variant_kinds=["tp"])]
    assert _normal(entries) == ["m-x"]  # even over a shorter profile without variant kinds


def test_rule_2_no_variant_kinds() -> None:
    assert _normal([_entry("a", variant_kinds=["local-only"]), _entry("longer-name")]) == ["longer-name"]


def test_rule_3_fewest_parallel_ranks() -> None:
    entries = [
        _entry("a", variant_kinds=["tp"], build_settings={"tensor_parallel_size": 4}),
        _entry(
            "bb", variant_kinds=["tp", "cp"], build_settings={"tensor_parallel_size": 1, "context_parallel_size": 2}
        ),
    ]
    assert [parallel_ranks(e) for e in entries] == [4, 2]
    assert _normal(entries) == ["bb"]
    assert parallel_ranks(_entry("c", build_settings={"tensor_parallel_size": "x"})) == 1


def test_rule_4_not_quantized() -> None:
    entries = [_entry("a", variant_kinds=["quantized"]), _entry("bb", variant_kinds=["local-only"])]
    assert _normal(entries) == ["bb"]


def test_rule_5_the_shortest_name_and_rule_6_name_order() -> None:
    assert _normal([_entry("model-long"), _entry("model")]) == ["model"]
    assert _normal([_entry("b"), _entry("a")]) == ["a"]


def test_smoke_profiles_are_never_normal_and_groups_are_by_checkpoint_and_revision() -> None:
    entries = [
        _entry("m-l0", variant_kinds=["l0"]),
        _entry("m-random", variant_kinds=["random"]),
        _entry("m-partial", variant_kinds=["partial"]),
        _entry("m-regression-x", variant_kinds=["regression"]),
        _entry("m-rev2", revision="r2", variant_kinds=["quantized"]),
        _entry("local", checkpoint=None, revision=None),
        _entry("broken", checkpoint=None, revision=None, verdict="invalid"),
    ]
    assert _normal(entries) == ["m-rev2", "local"]
    gaps = profile_gaps(entries)
    assert [e.profile for e in entries if gaps[e.manifest] == NO_FULL_MODEL] == [
        "m-l0",
        "m-random",
        "m-partial",
        "m-regression-x",
    ]
    marked = with_normal_profiles(entries)
    assert [e.profile for e in marked] == [e.profile for e in entries]
    assert [(e.normal_profile, e.profile_gap) for e in marked][-3:] == [(True, None), (True, None), (False, None)]
