"""A tiny random-weight Qwen2.5-VL checkpoint, built offline in a second or two, for a real `transformers serve`.

Nothing is downloaded: the config is written here (2 text layers of hidden 64, a 2-block vision tower whose merger
outputs 64), the weights are random under a fixed seed, and the tokenizer is a byte-level BPE trained on the fly
with `tokenizers`, carrying Qwen2-VL's special tokens and a chat template that renders video content parts. The
processor is the model's own (Qwen2_5_VLProcessor with Qwen2VLImageProcessor and Qwen2VLVideoProcessor), saved
with `save_pretrained` beside the weights, so the server loads the folder as it would a hub checkpoint.

Its answers are gibberish by design and never end early: the generation config suppresses every special token (the
end token among them) and every token without a letter or digit, so greedy decoding always runs to the token limit
(finish reason `length`) with visible text. That makes the qualification's failure deterministic: every answer is
cut off.
"""

from __future__ import annotations

import json
from pathlib import Path

MODEL_DIR_NAME = "tiny-qwen2.5-vl"  # one path component: the server finds it relative to its working directory
SEED = 1234
TEXT_HIDDEN = 64

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

# Qwen2-VL's own template, cut down to what a chat request holds: text, image and video parts, one turn or more.
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

_CORPUS = (
    "Does the rabbit come out of the burrow or go into it? How does the rabbit's posture change during the clip? "
    "Which comes first: the rabbit's big yawn with his arms stretched wide, or the rabbit scratching his head? "
    "Which happens earlier in the clip? A. B. C. D. Answer with the option's letter only. "
    "he goes into the burrow, he comes out of the burrow, from crawling low to standing upright. "
    "Describe this video. What happens in the clip? The quick brown fox jumps over the lazy dog. 0123456789"
)


def _tokenizer(vocab_size: int = 480):  # -> transformers.PreTrainedTokenizerFast
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
    bpe.train_from_iterator([_CORPUS] * 4, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        model_max_length=32768,
        chat_template=CHAT_TEMPLATE,
    )


def _config(tokenizer):  # -> Qwen2_5_VLConfig
    from transformers import Qwen2_5_VLConfig

    ids = {token: tokenizer.convert_tokens_to_ids(token) for token in SPECIAL_TOKENS}
    text = {
        "vocab_size": len(tokenizer),
        "hidden_size": TEXT_HIDDEN,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 32768,
        # head_dim 16: the multimodal rotary sections (time, height, width) cover its 8 frequency pairs.
        "rope_parameters": {"rope_type": "default", "rope_theta": 1_000_000.0, "mrope_section": [2, 3, 3]},
        "bos_token_id": ids["<|endoftext|>"],
        "eos_token_id": ids["<|im_end|>"],
        "pad_token_id": ids["<|endoftext|>"],
    }
    vision = {
        "depth": 2,
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_heads": 2,
        "out_hidden_size": TEXT_HIDDEN,
        "fullatt_block_indexes": [1],
        "window_size": 112,
        "patch_size": 14,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
    }
    return Qwen2_5_VLConfig(
        text_config=text,
        vision_config=vision,
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=True,
    )


def _processor(tokenizer):  # -> Qwen2_5_VLProcessor
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
    tokenizer = _tokenizer()
    config = _config(tokenizer)
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
