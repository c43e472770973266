"""`--streaming` on a row: whether its AIPerf run asks the server to stream, and the figures of a streamed run.

An endpoint row (a server named by `--url`, the self-test's reference endpoint, `compare`'s server) streams as
asked: a server that refuses stream=true fails those requests, each named. A TRTMC row streams only where
trtmc-server accepts it: one request with stream=true (the run's first planned request, as AIPerf would send it)
goes first; refused, the row is measured unstreamed and says so on its `aiperf` stage and `streaming_note`
(trtmc-server's text schema refuses stream=true today). That one request is the server's like any other: it is
numbered among its chat requests.

A streamed row's figures come from AIPerf's own per-request metrics (aiperf/exports.py, STREAM_METRICS): time to
first token and inter-token latency over the profiling requests that came back whole, and output tokens per
second over the profiling window (AIPerf's token counts, by the run's tokenizer, streamed or not).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..aiperf.dataset import Prompt, RequestPlan
from ..climb.protocol import Climb, EndpointRow, RowJob, Served
from ..climb.stats import latency_stats
from ..results import RequestRow
from ..serving.capability import check_capability
from ..transports.clips import chat_video_url
from ..transports.table import used_transport

STREAM_NOT_USED = (
    "--streaming not used on this row: trtmc-server refused a request with stream=true ({why}); measured unstreamed"
)


def streaming_choice(row: RowJob, climb: Climb, target: Served, plan: RequestPlan) -> tuple[bool, str | None]:
    """(whether AIPerf streams, the note saying why not where --streaming was asked and is not used)."""
    if not row.job.settings.streaming:
        return False, None
    if isinstance(row, EndpointRow):
        return True, None
    refusal = _stream_refusal(row, climb, target, plan)
    return (True, None) if refusal is None else (False, STREAM_NOT_USED.format(why=refusal))


def _stream_refusal(row: RowJob, climb: Climb, target: Served, plan: RequestPlan) -> str | None:
    """None where the server answers a streamed request with HTTP 200; else what it said (or why none was sent)."""
    from ..media import ClipError

    if not plan.requests:
        return "no planned request to try it with"
    first, settings = plan.requests[0], row.job.settings
    prompt = Prompt(question_id=first.question_id, clip_id=first.clip_id, clip_path=first.clip_path, text=first.text)
    transport = used_transport(climb.measurement.video_transport if climb.measurement else None)
    row.progress("streaming: one request with stream=true, to see whether trtmc-server accepts it")
    try:
        result = check_capability(
            target.url,
            target.model,
            Path(first.clip_path),
            first.text,
            max_tokens=plan.max_tokens,
            timeout_s=settings.request_timeout_s,
            max_response_bytes=settings.max_response_bytes,
            body_limit=settings.body_limit,
            api_key=row.job.api_key,
            video_url=chat_video_url(transport, prompt, row.job.clip_urls),
            extra={**plan.extra_body, "stream": True},
        )
    except (ClipError, OSError, ValueError) as error:
        return f"not sent: {error}"
    if result.http_status == 200:
        return None
    return result.detail or f"HTTP {result.http_status}"


def stream_figures(records: list[RequestRow], *, streamed: bool, note: str | None) -> dict[str, Any]:
    """The row's streaming figures over its profiling requests that came back whole (TTFT and ITL None where no
    request has one: an unstreamed run)."""
    completed = [r for r in records if r.phase == "profiling" and r.error is None]
    ttft = [r.ttft_ms for r in completed if r.ttft_ms is not None]
    itl = [r.itl_ms for r in completed if r.itl_ms is not None]
    return {
        "streamed": streamed,
        "streaming_note": note,
        "ttft": latency_stats(ttft) if ttft else None,
        "itl": latency_stats(itl) if itl else None,
        "output_tokens_per_s": output_tokens_per_second(completed),
    }


def output_tokens_per_second(completed: list[RequestRow]) -> float | None:
    """AIPerf's output token counts summed over the window from the first start to the last end; None where a
    request lacks its count or its times (no tokenizer count, a record cut short)."""
    if not completed or any(r.output_tokens is None or not r.start_ns or not r.end_ns for r in completed):
        return None
    span_ns = max(r.end_ns or 0 for r in completed) - min(r.start_ns or 0 for r in completed)
    if span_ns <= 0:
        return None
    return round(sum(r.output_tokens or 0 for r in completed) / (span_ns / 1e9), 3)
