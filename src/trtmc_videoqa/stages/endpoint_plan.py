"""The `plan` stage of an endpoint row: the row was planned when it started; here it takes the workload's facts and
the sampling the server states it applies, learns what serves it, and records the model name sent as given (the
user's own value, which the public check reads past)."""

from __future__ import annotations

import json
from dataclasses import replace

from ..climb.protocol import Climb, EndpointRow, served
from ..common.atomic_write import write_text_atomic
from ..plan.row_start import with_server_sampling, with_workload_facts
from ..results.layout import SERVED_MODEL_FILE
from .identity.live import endpoint_mechanics


def endpoint_plan(row: EndpointRow, climb: Climb) -> Climb:
    job = row.job
    begun = with_server_sampling(with_workload_facts(job, climb.row), job, row.stated)
    write_text_atomic(row.row_dir / SERVED_MODEL_FILE, json.dumps({"model": served(climb).model}) + "\n")
    mechanics = endpoint_mechanics(begun, row.native_url)
    return replace(climb, row=begun.model_copy(update={"serving_mechanics": mechanics}))
