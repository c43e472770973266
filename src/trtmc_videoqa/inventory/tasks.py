"""Task contracts: what each TRTMC Task (or older task strategy) takes and gives.

This is a registry of Task IDs, never of model names: a verdict follows from the Task a manifest names, the inputs
its testcases carry, and the family's media path. A Task missing here gets a contract inferred from its name, and
the row says that the contract was inferred.
"""

from __future__ import annotations

from dataclasses import dataclass

# Input kinds. "image" is one image; "images" several independent images; "frames" an ordered clip (frame list or a
# video file) — the only input that can carry time.
VISUAL_INPUTS = frozenset({"image", "images", "frames"})
# Output kinds that are neither an answer nor media.
NON_GENERATIVE_OUTPUTS = frozenset({"features", "scores", "boxes", "action", "structure", "forecast", "disparity"})


@dataclass(frozen=True)
class Contract:
    inputs: tuple[str, ...]
    output: str  # text | decision | image | video | image-or-video | masks | tracks | poses | audio | <non-generative>
    note: str = ""


def _c(inputs: str, output: str, note: str = "") -> Contract:
    return Contract(tuple(inputs.split()), output, note)


_SINGLE_IMAGE = "the Task request carries one image_path"

_VIDEO_VIEW = (
    "the request's messages carry text and a video view: the clip's frames in order with one time in seconds per "
    "frame (core/api/include/trtmc/language.h, video.h)"
)
_BOUNDARY = "the request's first and last frames are two still images, not a clip with times"
_REFERENCES = "each reference is an image, a clip (with its own soundtrack or none) or audio; the video has its audio"
_VIDEO_TO_TEXT = {
    "video_text_to_text": "text frames",
    "image_video_text_to_text": "text image frames",
    "audio_video_text_to_text": "text audio frames",
    "video_text_conversation": "text frames",
    "batch_video_text_conversation": "text frames",
    "batch_text_images_video_conversations": "text images frames",
    "streaming_video_text_to_text": "text frames",
    "streaming_image_video_text_to_text": "text image frames",
    "streaming_video_text_conversation": "text frames",
}
VIDEO_TO_TEXT_TASKS = frozenset(_VIDEO_TO_TEXT)

# Newer layout: snake_case Task IDs (apps/benchmark/trtmc_benchmark/task_adapters.py, families/*/tests/manifests).
TASKS: dict[str, Contract] = {
    "vision_language_generation": _c("text image", "text", _SINGLE_IMAGE),
    "images_text_to_text": _c("text image", "text", "despite the plural name, " + _SINGLE_IMAGE),
    "structured_decision": _c("text images frames", "decision", "answers are schema-option probabilities, not text"),
    "text_to_video": _c("text", "video"),
    # core/runtime/include/trtmc/internal/video.h: a name's "frames" is not always a clip. Boundary frames are the
    # first and the last frame as two still images (no clip, no time), and references mix images, clips and audio.
    "boundary_frames_text_to_video": _c("images text", "video", _BOUNDARY),
    "boundary_frames_text_to_audio_video": _c("images text", "video", _BOUNDARY + "; the video has its audio"),
    "references_text_to_audio_video": _c("images frames audio text", "video", _REFERENCES),
    "image_text_action_to_video": _c("image text", "video"),
    "world_model_generation": _c("text image", "image-or-video"),
    "image_generation": _c("text", "image-or-video", "video when the manifest asks for more than one frame"),
    "image_generation_batch": _c("text", "image-or-video"),
    "text_to_image": _c("text", "image"),
    "batch_text_to_image": _c("text", "image"),
    "images_text_to_image_edit": _c("image text", "image"),
    "image_edit": _c("image text", "image"),
    "frames_to_detected_mask_tracks": _c("frames", "tracks"),
    "frames_text_to_mask_tracks": _c("frames text", "tracks"),
    "prompt_frame_text_to_mask_tracks": _c("frames text", "tracks"),
    "crop_pose_tracking": _c("images", "poses"),
    "pose_hypotheses_crops_to_refined_poses": _c("images", "poses"),
    "image_to_class_scores": _c("image", "scores"),
    "classification": _c("", "scores", "input modality comes from the manifest"),
    "image_to_boxes": _c("image", "boxes"),
    "object_detection": _c("image", "boxes"),
    "image_to_token_and_pooled_features": _c("image", "features"),
    "image_to_token_features": _c("image", "features"),
    "image_to_pooled_features": _c("image", "features"),
    "image_to_spatial_features": _c("image", "features"),
    "image_features": _c("image", "features"),
    "image_to_semantic_segmentation": _c("image", "masks"),
    "segmentation": _c("image", "masks"),
    "image_points_to_masks": _c("image", "masks"),
    "prompted_segmentation": _c("image", "masks"),
    "image_text_to_instance_masks": _c("image text", "masks"),
    "text_prompted_segmentation": _c("image text", "masks"),
    "stereo_images_to_disparity": _c("images", "disparity"),
    "stereo_disparity": _c("images", "disparity"),
    "image_to_metric_geometry": _c("image", "features"),
    "monocular_geometry": _c("image", "features"),
    "image_state_to_action_chunk": _c("image", "action"),
    "image_state_action_queue": _c("image", "action"),
    "robot_control": _c("image", "action"),
    "molecular_document_to_structure": _c("text", "structure"),
    "text_to_pooled_features": _c("text", "features"),
    "text_to_head_scores": _c("text", "scores"),
    "text_to_token_features": _c("text", "features"),
    "text_to_embedding": _c("text", "features"),
    "embedding": _c("text", "features", "input modality comes from the manifest"),
    "encoding": _c("text", "features"),
    "text_query_documents_to_relevance": _c("text", "scores"),
    "reranking": _c("text", "scores", "input modality comes from the manifest"),
    "series_to_point_forecast": _c("", "forecast"),
    "series_to_quantile_forecast": _c("", "forecast"),
    "series_to_point_and_quantile_forecast": _c("", "forecast"),
    "series_to_regression_distribution": _c("", "forecast"),
    "series_to_regression_values": _c("", "forecast"),
    "batch_series_to_point_forecast": _c("", "forecast"),
    "batch_series_to_quantile_forecast": _c("", "forecast"),
    "batch_series_to_point_and_quantile_forecast": _c("", "forecast"),
    "time_series_forecast": _c("", "forecast"),
    "text_generation": _c("text", "text"),
    "text_continuation": _c("text", "text"),
    "conditional_text_generation": _c("text", "text"),
    "corrupted_text_reconstruction": _c("text", "text"),
    "text_summarization": _c("text", "text"),
    "unconditional_text_generation": _c("", "text"),
    "latent_conditioned_text_generation": _c("text", "text"),
    "latent_replay_to_text": _c("text", "text"),
    "latent_denoising_step": _c("text", "features"),
    "latent_to_token_logits": _c("text", "features"),
    "text_translation": _c("text", "text"),
    "text_to_audio": _c("text", "audio"),
    "text_to_speech": _c("text", "audio"),
    "streaming_text_to_speech": _c("text", "audio"),
    "audio_generation": _c("text", "audio"),
    "speech_to_speech_response": _c("audio", "audio"),
    "speech_to_speech": _c("audio", "audio"),
    "duplex_speech_dialogue": _c("audio", "audio"),
    "offline_speech_dialogue": _c("audio", "audio"),
    "tool_speech_dialogue": _c("audio", "audio"),
    "speech_transcription": _c("audio", "text"),
    "speech_translation": _c("audio", "text"),
    "streaming_speech_transcription": _c("audio", "text"),
    "batch_speech_transcription": _c("audio", "text"),
    "batch_speech_translation": _c("audio", "text"),
    "mixed_batch_speech_to_text": _c("audio", "text"),
    "transcription": _c("audio", "text"),
    "transcription_streaming": _c("audio", "text"),
    # Video-to-text Tasks of the semantic Task API (core/api/include/trtmc/language.h and its stream headers;
    # core/runtime/include/trtmc/internal/language.h): each request carries messages whose parts are text or a video
    # view (core/api/include/trtmc/video.h: a clip's frames in order, one time in seconds per frame), and gives text.
    **{task: _c(inputs, "text", _VIDEO_VIEW) for task, inputs in _VIDEO_TO_TEXT.items()},
    # Seen in newer catalogs without a benchmark implementation yet.
    "video_segmentation": _c("frames text", "tracks"),
    "text_to_audio_video": _c("text", "video"),
    "speech_session": _c("audio", "audio"),
    "monocular_depth": _c("image", "features"),
    "structure_prediction": _c("text", "structure"),
    "pose_hypothesis_refinement": _c("images", "poses"),
    "points_to_semantic_segmentation": _c("", "masks", "point clouds in, not images"),
}

# Older layout: task strategies (tests/e2e/models/<family>/manifests/*.json `task_strategy`).
TASK_STRATEGIES: dict[str, Contract] = {
    "vision_language_generation": TASKS["vision_language_generation"],
    "omni_multimodal": _c("text image audio", "text", "one image at most; the talker stage adds speech"),
    "diffusion_media_generation": _c("text", "image-or-video", "video when a testcase asks for more than one frame"),
    "prompted_segmentation": _c("image", "masks"),
    "segmentation": _c("image", "masks"),
    "image_classification": _c("image", "scores"),
    "image_feature_extraction": _c("image", "features"),
    "stereo_disparity": _c("images", "disparity"),
    "embedding": _c("text", "features", "input modality comes from the manifest"),
    "reranking": _c("text", "scores", "input modality comes from the manifest"),
    "encoder_only_nlp": _c("text", "features"),
    "text_generation_causal": _c("text", "text"),
    "diffusion_text_generation": _c("text", "text"),
    "speech_to_text": _c("audio", "text"),
    "text_to_audio": _c("text", "audio"),
    "speech_to_speech": _c("audio", "audio"),
    "neural_operator": _c("", "forecast"),
}

# Runtime strategies that turn an image Task into an ordered-frames one (older layout).
FRAME_RUNTIME_MARKERS = ("video_tracking", "video")

_INPUT_WORDS = {
    "image": "image",
    "images": "images",
    "frames": "frames",
    "frame": "frames",
    "video": "frames",
    "clip": "frames",
    "text": "text",
    "prompt": "text",
    "document": "text",
    "speech": "audio",
    "audio": "audio",
}
# Order matters: "video_segmentation" segments a video, it does not make one.
_OUTPUT_WORDS = (
    ("tracks", "tracks"),
    ("masks", "masks"),
    ("mask", "masks"),
    ("segmentation", "masks"),
    ("tracking", "tracks"),
    ("video", "video"),
    ("decision", "decision"),
    ("text", "text"),
    ("answer", "text"),
    ("image", "image"),
    ("speech", "audio"),
    ("audio", "audio"),
    ("embedding", "features"),
    ("features", "features"),
    ("scores", "scores"),
    ("relevance", "scores"),
    ("boxes", "boxes"),
    ("action", "action"),
    ("forecast", "forecast"),
    ("generation", "text"),
)


def contract_for(task: str, older_layout: bool) -> tuple[Contract, str]:
    """The contract and where it came from; unknown Tasks are inferred from their words, and say so."""
    table = TASK_STRATEGIES if older_layout else TASKS
    if task in table:
        kind = "task strategy" if older_layout else "Task"
        return table[task], f"TRTMC {kind} contract for {task!r}"
    if task in TASKS:
        return TASKS[task], f"TRTMC Task contract for {task!r}"
    return infer_contract(task), f"inferred from the words of the unknown Task {task!r}"


def infer_contract(task: str) -> Contract:
    words = task.lower().split("_")
    if "to" in words:
        cut = words.index("to")
        before, after = words[:cut], words[cut + 1 :]
    else:
        before, after = words, words
    inputs = tuple(dict.fromkeys(_INPUT_WORDS[w] for w in before if w in _INPUT_WORDS))
    output = next((kind for word, kind in _OUTPUT_WORDS if word in after), "unknown")
    if output in ("masks", "tracks") and "video" in words:
        inputs = tuple(dict.fromkeys((*inputs, "frames")))
    return Contract(inputs, output, "inferred from the Task name")
