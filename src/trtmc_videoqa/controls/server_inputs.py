"""The model inputs `transformers serve` (5.24) makes of one chat request with a clip and a question, made here by
the same calls: the server's own conversion of OpenAI-format messages, then the processor's `apply_chat_template`
with the keyword arguments the server passes. Every key the processor returns is kept (`second_per_grid_ts`,
Qwen2.5-VL's time positions, and `mm_token_type_ids` among them): a model trained on fewer keys answers differently
when served.

torch and transformers are imported inside the functions (the `real-server` extra).
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal

Order = Literal["video-first", "text-first"]

# What the server asks the processor for when a request names no frame count (5.24: 32 for every video).
SERVER_DEFAULT_FRAMES = 32


def chat_messages(video_url: str, text: str, order: Order) -> list[dict[str, Any]]:
    """One user turn as a client sends it: a `video_url` part and a text part, in `order`."""
    parts: list[dict[str, Any]] = [
        {"type": "video_url", "video_url": {"url": video_url}},
        {"type": "text", "text": text},
    ]
    if order == "text-first":
        parts.reverse()
    return [{"role": "user", "content": parts}]


def server_inputs(processor, model, messages: list[dict[str, Any]], *, num_frames: int, reads_audio: bool):
    """The processor's output for `messages`, as the server computes it before generating.

    `reads_audio`: whether the server also reads each clip's sound. 5.24 does for every Qwen2.5-VL request with a
    video (and fails on a clip without a sound track); a patched or newer server may not.
    """
    from transformers.cli.serving.model_manager import ModelManager
    from transformers.cli.serving.utils import BaseHandler, Modality

    modality = ModelManager.get_model_modality(model, processor=processor)
    converted = BaseHandler.get_processor_inputs_from_messages(messages, modality)
    return processor.apply_chat_template(
        converted,
        add_generation_prompt=True,
        tools=None,
        return_tensors="pt",
        return_dict=True,
        tokenize=True,
        load_audio_from_video=reads_audio and modality == Modality.MULTIMODAL,
        num_frames=num_frames,
    )


def inputs_digest(inputs: dict[str, Any]) -> str:
    """The sha256 of every tensor of `inputs`, key by key: equal for two requests the server turns into the same
    model inputs (a clip with and without its silent sound track)."""
    hashed = hashlib.sha256()
    for key in sorted(inputs):
        hashed.update(key.encode())
        hashed.update(inputs[key].contiguous().numpy().tobytes())
    return hashed.hexdigest()
