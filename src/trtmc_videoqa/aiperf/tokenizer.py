"""A small local tokenizer for AIPerf's token counting, so nothing is downloaded (AIPerf's `builtin` is not offline).

Token counts feed only AIPerf's ISL/OSL figures, never latency or answers; the report says which tokenizer was used.
A checkpoint's own tokenizer (a directory with tokenizer.json) is preferred where the bundle or checkpoint has one.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..common.atomic_write import write_text_atomic

LOCAL_TOKENIZER_NAME = "trtmc-videoqa-local-bpe"
_CORPUS = (
    "In which direction does the square move? What happens first? Answer with the option's letter only. "
    "A. left to right B. right to left C. it does not move D. up and down. The rabbit comes out of the burrow, "
    "stands up and stretches. I cannot tell from this clip."
)


def has_tokenizer(directory: Path) -> bool:
    return (directory / "tokenizer.json").is_file() and (directory / "tokenizer_config.json").is_file()


def ensure_local_tokenizer(directory: Path) -> Path:
    """Train (once, in well under a second) a byte-level BPE tokenizer into `directory`, deterministically."""
    if has_tokenizer(directory):
        return directory
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=320,
        special_tokens=["[UNK]", "<s>", "</s>"],
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator([_CORPUS] * 4, trainer=trainer)
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "unk_token": "[UNK]",
        "bos_token": "<s>",
        "eos_token": "</s>",
        "model_max_length": 1_000_000,
        "name_or_path": LOCAL_TOKENIZER_NAME,
    }
    # Written atomically by us (a full disk is an OSError naming the file), the config last: has_tokenizer()
    # sees a complete tokenizer or none.
    write_text_atomic(directory / "tokenizer.json", tokenizer.to_str(pretty=True))
    write_text_atomic(directory / "tokenizer_config.json", json.dumps(config, indent=2) + "\n")
    return directory


def choose_tokenizer(candidates: list[Path], fallback_dir: Path) -> tuple[Path, str]:
    """The first candidate that holds a tokenizer (the checkpoint's own), else the small local one; and which."""
    for candidate in candidates:
        if has_tokenizer(candidate):
            return candidate, f"the checkpoint's own tokenizer ({candidate})"
    return ensure_local_tokenizer(
        fallback_dir
    ), f"{LOCAL_TOKENIZER_NAME}: a small local tokenizer (token counts are approximate)"


# AIPerf 0.13.0 in Hugging Face offline mode hands every tokenizer name, a local folder too, to the hub's
# snapshot_download, which refuses a path ("Repo id must be in the form ..."); outside it, a local folder is read
# from disk with no network. Our tokenizer is always a local folder, so AIPerf runs without the offline switches.
# The recorded command clears them the same way (aiperf/command.py, recorded_argv).
OFFLINE_SWITCHES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")


def aiperf_environment(base: dict[str, str]) -> dict[str, str]:
    """`base` (the environment) without the switches that stop AIPerf from reading a local tokenizer folder."""
    return {name: value for name, value in base.items() if name not in OFFLINE_SWITCHES}
