"""The shipped control models as files (no torch here): where `control-model` says they are, what each folder
holds, that its configuration is the committed base configuration, and that its model card and training record
say what it is. That the weights answer is tests/test_real_server.py's (in process and through a real server)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import run_main

from trtmc_videoqa.controls.build import SPECIAL_TOKENS, base_config
from trtmc_videoqa.controls.shipped import CONTROL, TWINS, ControlModel

SHIPPED = [CONTROL, *TWINS.values()]
LIMIT_BYTES = 8 * 1024 * 1024
# What an HF folder of this model needs to load in `transformers serve`; nothing pickled (no .bin, .pt, .pkl).
NEEDED = {
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "processor_config.json",
    "chat_template.jinja",
    "README.md",
    "training.json",
}


@pytest.mark.parametrize("model", SHIPPED, ids=lambda model: model.folder)
def test_each_folder_is_a_small_safetensors_checkpoint_with_card_and_record(model: ControlModel) -> None:
    files = {path.name: path for path in model.path.iterdir()}
    assert set(files) >= NEEDED, sorted(NEEDED - set(files))
    assert not [name for name in files if name.endswith((".bin", ".pt", ".pth", ".pkl", ".ckpt"))]
    assert all(path.is_file() and not path.is_symlink() for path in files.values())
    assert sum(path.stat().st_size for path in files.values()) <= LIMIT_BYTES
    card = files["README.md"].read_text()
    assert card.startswith("---\nlicense: apache-2.0\n")
    words = " ".join(card.split())
    assert "not a capable model" in words and "memorises those clips" in words
    assert "CC BY 3.0" in words and "Blender Foundation" in words and "vLLM is untested" in words
    record = json.loads(files["training.json"].read_text())
    assert record["model"] == model.folder and record["seed"] == base_config()["training"]["seed"] + model.seed_offset
    assert {"python", "torch", "transformers"} <= set(record["versions"]) and record["seconds"] > 0
    if not model.order_blind:  # the control learnt every request it was taught, with room to spare
        assert record["taught_exactly"] == record["examples"] and record["smallest_margin"] > 0


@pytest.mark.parametrize("model", SHIPPED, ids=lambda model: model.folder)
def test_each_configuration_is_the_committed_base_configuration(model: ControlModel) -> None:
    base = base_config()
    config = json.loads((model.path / "config.json").read_text())
    assert config["architectures"] == [base["architecture"]]
    text, vision = config["text_config"], config["vision_config"]
    for key, value in base["text"].items():
        found = text["rope_parameters"][key] if key in ("rope_theta", "mrope_section") else text[key]
        assert found == value, key
    for key, value in base["vision"].items():
        assert vision[key] == value, key
    processor = json.loads((model.path / "processor_config.json").read_text())
    for part in ("image_processor", "video_processor"):
        size = processor[part]["size"]
        assert (size["shortest_edge"], size["longest_edge"]) == (
            base["processor"]["min_pixels"],
            base["processor"]["max_pixels"],
        )
    vocabulary = json.loads((model.path / "tokenizer.json").read_text())
    added = [token["content"] for token in vocabulary["added_tokens"]]
    assert added[: len(SPECIAL_TOKENS)] == list(SPECIAL_TOKENS)
    assert text["vocab_size"] <= base["tokenizer"]["vocab_size"]


def test_control_model_prints_each_folder(capsys: pytest.CaptureFixture[str]) -> None:
    done = run_main(capsys, "control-model")
    assert done.returncode == 0 and Path(done.stdout.strip()) == CONTROL.path
    twin = run_main(capsys, "control-model", "--twin", "order-blind")
    assert twin.returncode == 0 and Path(twin.stdout.strip()) == TWINS["order-blind"].path
    assert CONTROL.path.name != TWINS["order-blind"].path.name  # distinct row names when both are qualified
    refused = run_main(capsys, "control-model", "--twin", "blind")
    assert refused.returncode == 2 and "invalid choice" in refused.stderr
