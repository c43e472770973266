"""An untrained control checkpoint from the committed base configuration (base.json): the Qwen2.5-VL configuration,
a byte-level BPE tokenizer learnt from the workloads' own prompts, and the model's own processor classes.

torch and transformers (the `real-server` extra) are imported inside the functions, so that importing this module
costs nothing and the package's type check never reads them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

BASE_CONFIG = Path(__file__).with_name("base.json")

# Qwen2-VL's special tokens, in its order; the vision ones are what the processor and the model look up by name.
SPECIAL_TOKENS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
)
END_TOKEN = "<|im_end|>"
PAD_TOKEN = "<|endoftext|>"

# Qwen2-VL's own template, cut down to what a chat request holds: text, image and video parts, one turn or more.
# An `audio` part (transformers adds one after each video when it reads a clip's sound) renders as nothing.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'video' or 'video' in content %}"
    "<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}"
    "{% endif %}{% endfor %}{% endif %}"
    "<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@cache
def base_config() -> dict[str, Any]:
    """base.json, read once."""
    loaded: dict[str, Any] = json.loads(BASE_CONFIG.read_text(encoding="utf-8"))
    return loaded


def build_tokenizer(corpus: Iterable[str], vocab_size: int):  # -> transformers.PreTrainedTokenizerFast
    """A byte-level BPE learnt from `corpus` (deterministic for the same texts), with Qwen2-VL's special tokens and
    the chat template above."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    bpe.train_from_iterator(list(corpus), trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token=END_TOKEN,
        pad_token=PAD_TOKEN,
        model_max_length=32768,
        chat_template=CHAT_TEMPLATE,
    )


def build_config(tokenizer, base: dict[str, Any]):  # -> Qwen2_5_VLConfig
    """The Qwen2.5-VL configuration of `base` for `tokenizer`'s vocabulary and special tokens."""
    from transformers import Qwen2_5_VLConfig

    ids = {token: tokenizer.convert_tokens_to_ids(token) for token in SPECIAL_TOKENS}
    text = dict(base["text"])
    rope = {"rope_type": "default", "rope_theta": text.pop("rope_theta"), "mrope_section": text.pop("mrope_section")}
    text.update(
        vocab_size=len(tokenizer),
        rope_parameters=rope,
        bos_token_id=ids[PAD_TOKEN],
        eos_token_id=ids[END_TOKEN],
        pad_token_id=ids[PAD_TOKEN],
    )
    vision = {**base["vision"], "out_hidden_size": base["text"]["hidden_size"]}
    return Qwen2_5_VLConfig(
        text_config=text,
        vision_config=vision,
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=True,
    )


def build_processor(tokenizer, base: dict[str, Any]):  # -> Qwen2_5_VLProcessor
    """The model's own processor classes, with base.json's pixel limits for images and video frames alike."""
    from transformers import Qwen2_5_VLProcessor, Qwen2VLImageProcessor, Qwen2VLVideoProcessor

    size = {"shortest_edge": base["processor"]["min_pixels"], "longest_edge": base["processor"]["max_pixels"]}
    vision = base["vision"]
    patches = {
        "patch_size": vision["patch_size"],
        "temporal_patch_size": vision["temporal_patch_size"],
        "merge_size": vision["spatial_merge_size"],
    }
    return Qwen2_5_VLProcessor(
        image_processor=Qwen2VLImageProcessor(size=size, **patches),
        # The frame cap stated, not left to a default that transformers announces it will change.
        video_processor=Qwen2VLVideoProcessor(size=size, cap_pixels_per_frame=False, **patches),
        tokenizer=tokenizer,
        chat_template=CHAT_TEMPLATE,
    )
