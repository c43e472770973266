"""A tiny random-weight Qwen2.5-VL checkpoint, built offline in a second or two, for a real `transformers serve`.

Nothing is downloaded: the configuration is the control models' committed base configuration (controls/base.json:
2 text layers of hidden 64, a 2-block vision tower whose merger outputs 64), the weights are random under a fixed
seed, and the tokenizer is a byte-level BPE trained on the fly (controls/build.py), carrying Qwen2-VL's special
tokens and a chat template that renders video content parts. The processor is the model's own (Qwen2_5_VLProcessor
with Qwen2VLImageProcessor and Qwen2VLVideoProcessor) with its default pixel limits, saved with `save_pretrained`
beside the weights, so the server loads the folder as it would a hub checkpoint.

Its answers are gibberish by design and never end early: the generation config suppresses every special token (the
end token among them) and every token without a letter or digit, so greedy decoding always runs to the token limit
(finish reason `length`) with visible text. That makes the qualification's failure deterministic: every answer is
cut off.
"""

from __future__ import annotations

import json
from pathlib import Path

from trtmc_videoqa.controls.build import CHAT_TEMPLATE, SPECIAL_TOKENS, base_config, build_config, build_tokenizer

MODEL_DIR_NAME = "tiny-qwen2.5-vl"  # one path component: the server finds it relative to its working directory
SEED = 1234

_CORPUS = (
    "Does the rabbit come out of the burrow or go into it? How does the rabbit's posture change during the clip? "
    "Which comes first: the rabbit's big yawn with his arms stretched wide, or the rabbit scratching his head? "
    "Which happens earlier in the clip? A. B. C. D. Answer with the option's letter only. "
    "he goes into the burrow, he comes out of the burrow, from crawling low to standing upright. "
    "Describe this video. What happens in the clip? The quick brown fox jumps over the lazy dog. 0123456789"
)


def _processor(tokenizer):  # -> Qwen2_5_VLProcessor
    """The model's processor classes with their default pixel limits (not the controls' smaller ones): 8 frames of
    the 320x180 clip are then several hundred placeholder tokens, which the test tells from a question alone."""
    from transformers import Qwen2_5_VLProcessor, Qwen2VLImageProcessor, Qwen2VLVideoProcessor

    return Qwen2_5_VLProcessor(
        image_processor=Qwen2VLImageProcessor(),
        video_processor=Qwen2VLVideoProcessor(),
        tokenizer=tokenizer,
        chat_template=CHAT_TEMPLATE,
    )


def _has_word(text: str) -> bool:
    return text.isprintable() and any(character.isalnum() for character in text)


def build_tiny_vlm(parent: Path) -> Path:
    """Build the checkpoint into `parent / MODEL_DIR_NAME` (weights, config, generation config, tokenizer,
    processor, chat template) and return that folder."""
    import torch
    from transformers import GenerationConfig, Qwen2_5_VLForConditionalGeneration

    folder = parent / MODEL_DIR_NAME
    tokenizer = build_tokenizer([_CORPUS] * 4, vocab_size=480)
    config = build_config(tokenizer, base_config())
    torch.manual_seed(SEED)
    model = Qwen2_5_VLForConditionalGeneration(config).eval()
    special_ids = {tokenizer.convert_tokens_to_ids(token) for token in SPECIAL_TOKENS}
    # Only tokens with a letter or digit are left: whitespace alone is an empty answer once the server strips it
    # (a random model repeats "\n" greedily), and quotes or control bytes alone could clean away to nothing.
    wordless_ids = {i for i in range(len(tokenizer)) if not _has_word(tokenizer.decode([i]))}
    model.generation_config = GenerationConfig(
        do_sample=False,  # greedy: the same gibberish every time
        eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tokenizer.convert_tokens_to_ids("<|endoftext|>"),
        # No special token is ever produced, the end token among them: every answer runs to max_tokens; and every
        # token produced has a letter or digit, so no answer is empty.
        suppress_tokens=sorted(special_ids | wordless_ids),
    )
    model.save_pretrained(folder)
    _processor(tokenizer).save_pretrained(folder)
    (folder / "tiny_vlm.json").write_text(
        json.dumps({"parameters": sum(p.numel() for p in model.parameters()), "seed": SEED}) + "\n"
    )
    return folder


def parameter_count(folder: Path) -> int:
    return int(json.loads((folder / "tiny_vlm.json").read_text())["parameters"])
