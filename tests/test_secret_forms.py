"""A secret echoed back in another encoding (base64 with or without `Bearer `, hex, URL-encoded) is scrubbed from a
row's files and caught by the public check, as the plain value is."""

from __future__ import annotations

import base64
from pathlib import Path
from urllib.parse import quote

import pytest
from helpers import QUICK, run_main

from trtmc_videoqa.common.scrub import REDACTED, known_secrets, scrub_secrets, secret_forms
from trtmc_videoqa.publish.check import run_sentinels, scan_public
from trtmc_videoqa.reference import DEFAULT_MODEL_NAME, FaultKnobs, ReferenceConfig, ReferenceServer

KEY = "sk-echo-TESTKEY-0123456789abcdef"


def _echoes(key: str) -> dict[str, str]:
    raw = key.encode()
    return {
        "base64 of the header": base64.b64encode(b"Bearer " + raw).decode(),
        "base64 of the key": base64.b64encode(raw).decode(),
        "URL-safe base64, unpadded": base64.urlsafe_b64encode(raw).decode().rstrip("="),
        "base64 inside a longer text": base64.b64encode(b'{"authorization": "Bearer ' + raw + b'"}').decode(),
        "hex": raw.hex(),
        "HEX": raw.hex().upper(),
        "URL-encoded": quote(key + "/?&", safe=""),
    }


@pytest.mark.parametrize("prefix", range(7))
def test_the_forms_find_the_key_inside_any_base64_text(prefix: int) -> None:
    forms = secret_forms(KEY)
    for suffix in range(4):
        text = b"p" * prefix + KEY.encode() + b"s" * suffix
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            assert any(form in encode(text).decode() for form in forms), (prefix, suffix)
    assert not any(form in base64.b64encode(b"another key, same length!!!!!").decode() for form in forms)


def test_every_echoed_form_is_scrubbed_from_a_rows_files(tmp_path: Path) -> None:
    files = []
    for index, (name, echoed) in enumerate(_echoes(KEY).items()):
        files.append(tmp_path / f"{index}.txt")
        files[-1].write_text(f"{name}: {echoed}\n")
    scrub_secrets(files, known_secrets(KEY))
    for path, echoed in zip(files, _echoes(KEY).values(), strict=True):
        text = path.read_text()
        assert REDACTED in text and not any(form in text for form in secret_forms(KEY)), text
        assert echoed not in text


def test_the_public_check_names_a_key_echoed_in_base64(tmp_path: Path) -> None:
    sentinels = run_sentinels(tmp_path, secrets=known_secrets(KEY))
    for index, echoed in enumerate(_echoes(KEY).values()):
        (tmp_path / f"answer-{index}.json").write_text(f'{{"answer": "{echoed}"}}\n')
    hits = scan_public(tmp_path, sentinels)
    assert sorted(hit.file for hit in hits if hit.kind == "secret") == [f"answer-{i}.json" for i in range(7)]
    assert not any(KEY in hit.excerpt for hit in hits)


@pytest.mark.e2e
def test_a_server_that_echoes_the_key_in_base64_publishes_nothing_of_it(tmp_path: Path, monkeypatch, capsys) -> None:
    echoed = base64.b64encode(b"Bearer " + KEY.encode()).decode()
    monkeypatch.setenv("ECHOED_KEY", KEY)
    config = ReferenceConfig(api_key_env="ECHOED_KEY", faults=FaultKnobs(answer_text=f"(A) your header: {echoed}"))
    out = tmp_path / "out"
    with ReferenceServer(config) as server:
        args = ("--endpoint", server.url, "--model", DEFAULT_MODEL_NAME, "--api-key-env", "ECHOED_KEY", *QUICK)
        run_main(capsys, "qualify", *args, "--out", str(out))
    leaked = [
        path.relative_to(out).as_posix()
        for path in sorted(out.rglob("*"))
        if path.is_file() and "private" not in path.relative_to(out).parts
        if any(form.encode() in path.read_bytes() for form in secret_forms(KEY))
    ]
    assert leaked == []
    assert (out / "checkpoints" / DEFAULT_MODEL_NAME / "requests.jsonl").is_file()  # the answers were measured
    assert REDACTED in (out / "checkpoints" / DEFAULT_MODEL_NAME / "requests.jsonl").read_text()
    checked = run_main(capsys, "report", str(out), "--check-public")
    assert "secret" not in checked.stdout + checked.stderr
