"""The verdict of one row: a pure function of the Task contract, the testcases' inputs and the family's media path."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..results import Evidence, GapEvidence, Verdict
from .declared_support import RowDeclaration
from .family_source import SINGLE_IMAGE, TIME_AXIS, VIDEO_INPUT, FamilyScan
from .inputs import FRAME_COUNT_KEYS, FRAME_KEYS, IMAGE_KEYS, IMAGES_KEYS, InputFacts
from .tasks import NON_GENERATIVE_OUTPUTS, VISUAL_INPUTS, Contract


@dataclass
class Judgement:
    verdict: Verdict
    gap: str | None
    in_group: bool
    group_reason: str
    evidence: list[Evidence]
    gap_evidence: list[GapEvidence] = field(default_factory=list)
    ambiguities: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class RowFacts:
    """Everything the verdict depends on, gathered by the audit."""

    manifest_file: str
    task: str
    task_evidence: Evidence
    contract: Contract
    contract_inferred: bool
    contract_source: str
    inputs: InputFacts
    frame_runtime: Evidence | None  # an older-layout runtime strategy that runs on ordered frames
    scan: FamilyScan | None
    extra_input_evidence: list[Evidence] = field(default_factory=list)
    # What TRTMC itself declares (issue 27): None for the older layout; `declared` None when the family has no
    # support.py, judged as before.
    declaration: RowDeclaration | None = None
    family_video_tasks: tuple[str, ...] = ()  # video-to-text Tasks the family declares or binds


def _effective_output(facts: RowFacts) -> str:
    if facts.contract.output != "image-or-video":
        return facts.contract.output
    return "video" if any(count > 1 for count, _ in facts.inputs.frame_counts) else "image"


def _frames_in(facts: RowFacts, output: str) -> list[Evidence]:
    """Evidence that ordered frames reach the Task; empty when none do."""
    shown: list[Evidence] = []
    if "frames" in facts.inputs.evidence:
        shown.append(facts.inputs.evidence["frames"])
    elif "frames" in facts.contract.inputs:
        shown.append(facts.task_evidence)
    if facts.frame_runtime is not None:
        shown.append(facts.frame_runtime)
    if output in ("text", "decision"):  # a frame count on an understanding Task means frames in, not video out
        shown.extend(ev for count, ev in facts.inputs.frame_counts if count > 1)
    return shown


def judge(facts: RowFacts) -> Judgement:
    output = _effective_output(facts)
    visual = (set(facts.contract.inputs) | facts.inputs.kinds) & VISUAL_INPUTS
    frames = _frames_in(facts, output)
    video_out = output == "video"
    if video_out:
        reason = "its Task produces video"
    elif visual:
        reason = f"its Task takes {', '.join(sorted(visual))} input"
    else:
        reason = "its Task takes no image, video or frame input and produces no video"
    judgement = _decide(facts, output, visual, frames)
    judgement.in_group = bool(visual) or video_out
    judgement.group_reason = reason
    if facts.contract_inferred:
        judgement.ambiguities.append(
            f"the Task {facts.task!r} is not in the known Task contracts; "
            "its inputs and output were inferred from its name"
        )
    return judgement


def _decide(facts: RowFacts, output: str, visual: set[str], frames: list[Evidence]) -> Judgement:
    task_line = [facts.task_evidence]
    if output == "video":
        return Judgement(
            "video-generation",
            "generates video; it answers no question about a clip",
            False,
            "",
            task_line + [ev for _, ev in facts.inputs.frame_counts][:1],
        )
    if output in ("masks", "tracks", "poses"):
        return Judgement(
            "segmentation-tracking",
            f"segments or tracks ({output}); it gives no text answer",
            False,
            "",
            task_line + frames[:2],
        )
    if output in ("text", "decision") and frames:
        return _frames_judgement(facts, output, frames)
    if output in ("text", "decision") and visual:
        return _image_judgement(facts, output)
    if output == "image":
        return _image_output_judgement(facts, visual)
    if output in NON_GENERATIVE_OUTPUTS:
        judgement = Judgement("not-generative", f"returns {output}, not an answer", False, "", task_line)
        if visual:
            judgement.evidence.extend(facts.inputs.evidence[k] for k in sorted(visual) if k in facts.inputs.evidence)
        return judgement
    if output == "decision":
        return Judgement(
            "not-generative",
            "returns option probabilities over text only",
            False,
            "",
            task_line,
            _no_visual_gaps(facts, ("image", "images", "frames"), video_out=False),
        )
    judgement = Judgement(
        "text-or-speech",
        "takes and gives text or speech only; no visual input",
        False,
        "",
        task_line,
        _no_visual_gaps(facts, ("image", "images", "frames"), video_out=True),
    )
    if output == "unknown":
        judgement.ambiguities.append("the Task's output could not be determined")
    return judgement


def _image_output_judgement(facts: RowFacts, visual: set[str]) -> Judgement:
    """A Task that gives an image: it edits images (visual input) or generates them from text."""
    gap = "edits images; no video in or out" if visual else "generates images from text; no video in or out"
    absent = ("frames",) if visual else ("image", "images", "frames")
    judgement = Judgement(
        "image-only",
        gap,
        False,
        "",
        [facts.task_evidence],
        [*_no_visual_gaps(facts, absent, video_out=True), _frame_count_gap(facts)],
    )
    if "frames" in facts.inputs.kinds:
        judgement.ambiguities.append("a testcase sends ordered frames, but the Task's contract gives an image")
    return judgement


def _frames_judgement(facts: RowFacts, output: str, frames: list[Evidence]) -> Judgement:
    scan = facts.scan
    evidence = [facts.task_evidence, *frames]
    declaration = facts.declaration
    undeclared = declaration.missing if declaration is not None and declaration.declared is not None else None
    if declaration is not None:
        evidence += declaration.evidence
    if scan is not None and scan.temporal:
        evidence += scan.evidence(VIDEO_INPUT)[:2] + scan.evidence(TIME_AXIS)[:2]
        if output == "text" and undeclared is None:
            return Judgement("temporal-video-qa", None, False, "", evidence)
        if output == "text":
            gap = (
                f"ordered, timestamped frames reach a text answer, but TRTMC's own declaration is missing: {undeclared}"
            )
            return Judgement("partial", gap, False, "", evidence)
        return Judgement(
            "partial",
            "takes ordered, timestamped frames but answers as schema-option probabilities "
            "(a structured decision), not as text through chat",
            False,
            "",
            evidence,
        )
    missing = [] if scan is None else [scan.gap(group) for group in (VIDEO_INPUT, TIME_AXIS) if not scan.has(group)]
    if scan is not None:
        evidence += scan.evidence(VIDEO_INPUT)[:2]  # video frames in the code, but no time axis with them
    why = (
        "the family's model code was not found, so no time axis could be checked"
        if scan is None or not scan.found
        else "the family's model code shows no time axis for the frames"
    )
    verdict: Verdict = "partial" if output == "decision" else "image-only"
    also = f"; and {undeclared}" if undeclared else ""
    judgement = Judgement(
        verdict,
        f"frames reach the Task, but {why}: they may be independent image calls{also}",
        False,
        "",
        evidence,
        missing,
    )
    judgement.ambiguities.append(f"frames reach the Task but {why}")
    return judgement


def _image_judgement(facts: RowFacts, output: str) -> Judgement:
    scan = facts.scan
    inputs = facts.inputs
    note = f" ({facts.contract.note})" if facts.contract.note else ""
    evidence = [
        facts.task_evidence,
        *(inputs.evidence[k] for k in ("image", "images") if k in inputs.evidence),
        *facts.extra_input_evidence,
    ]
    gaps = [_key_gap(facts, ("frames",))]
    ambiguities: list[str] = []
    if not (inputs.kinds & VISUAL_INPUTS):
        ambiguities.append("the Task contract takes an image, but no testcase sends one")
    if scan is not None and scan.found:
        evidence += scan.evidence(SINGLE_IMAGE)[:2]
        gaps += [scan.gap(group) for group in (VIDEO_INPUT, TIME_AXIS) if not scan.has(group)]
        if scan.has(VIDEO_INPUT):
            first = scan.evidence(VIDEO_INPUT)[0]
            evidence.append(first)
            ambiguities.append(
                f"the family's model code mentions video ({first.file}:{first.line}) but no testcase "
                "sends frames and the Task takes one image"
            )
    what = "decides over images" if output == "decision" else "answers about one image per request"
    named = ""
    if facts.family_video_tasks:  # the family declares a video Task, but this manifest names another
        named = (
            f"; the manifest names {facts.task!r}, not the {', '.join(facts.family_video_tasks)} its family declares"
        )
    return Judgement(
        "image-only", f"{what}{note}; no ordered frames reach the Task{named}", False, "", evidence, gaps, ambiguities
    )


# Gap evidence for absence claims: the manifest's input keys searched, the Task contract consulted.
_KEYS_BY_KIND = {"image": IMAGE_KEYS, "images": IMAGES_KEYS, "frames": FRAME_KEYS}
_KIND_WORDS = {"image": "image", "images": "image-list", "frames": "ordered-frame"}


def _key_gap(facts: RowFacts, kinds: tuple[str, ...]) -> GapEvidence:
    """The manifest and its testcases searched for input keys of these kinds; the file is named only with no hit."""
    keys = sorted(set().union(*(_KEYS_BY_KIND[kind] for kind in kinds)))
    searched = f"{_or([_KIND_WORDS[k] for k in kinds])} input keys in the manifest and its testcases"
    found = sorted(set(kinds) & facts.inputs.kinds)
    empty = sorted(facts.inputs.empty_keys & set(keys))
    if found:
        searched += f"; found {', '.join(found)} input (see evidence)"
    if empty:
        searched += f"; named only with an empty value: {', '.join(empty)}"
    return GapEvidence(searched_for=searched, patterns=keys, files_without_hits=[] if found else [facts.manifest_file])


def _contract_gap(facts: RowFacts, kinds: tuple[str, ...], video_out: bool) -> GapEvidence:
    """The Task contract consulted (the tool's table of TRTMC Task contracts, keyed by the manifest's Task)."""
    contract = facts.contract
    patterns = [f"input {kind}" for kind in kinds] + (["output video"] if video_out else [])
    found = [kind for kind in kinds if kind in contract.inputs] + (
        ["video"] if video_out and contract.output == "video" else []
    )
    searched = (
        f"{_or(list(kinds))} input{', or video output,' if video_out else ''} in the Task contract consulted "
        f"for {facts.task!r} ({facts.contract_source}; "
        f"takes {', '.join(contract.inputs) or 'no declared input'}, gives {contract.output}"
        f"{f': {contract.note}' if contract.note else ''}); "
        "a table, not a file of the checkout"
    )
    if found:
        searched += f"; found {', '.join(found)}"
    return GapEvidence(searched_for=searched, patterns=patterns, files_without_hits=[])


def _frame_count_gap(facts: RowFacts) -> GapEvidence:
    """Frame counts above one (video output) in the manifest and its testcases."""
    counts = sorted({count for count, _ in facts.inputs.frame_counts})
    searched = "frame counts above 1 (video output) in the manifest and its testcases"
    if counts:
        searched += f"; counts present: {', '.join(map(str, counts))}"
    over = any(count > 1 for count in counts)
    return GapEvidence(
        searched_for=searched,
        patterns=[f"{key} > 1" for key in FRAME_COUNT_KEYS],
        files_without_hits=[] if over else [facts.manifest_file],
    )


def _or(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def _no_visual_gaps(facts: RowFacts, kinds: tuple[str, ...], video_out: bool) -> list[GapEvidence]:
    return [_key_gap(facts, kinds), _contract_gap(facts, kinds, video_out)]
