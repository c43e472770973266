"""junit.xml: qualified = pass, failed = failure, unsupported and blocked = skipped with the gap or reason."""

from __future__ import annotations

from xml.etree import ElementTree as ET

from ..results import Report

PASSING = frozenset({"aiperf-qualified", "endpoint-qualified"})
SKIPPED = frozenset({"unsupported", "blocked"})


def render_junit(report: Report) -> str:
    failures = sum(1 for r in report.rows if r.status == "failed")
    skipped = sum(1 for r in report.rows if r.status in SKIPPED or r.status not in PASSING | {"failed"})
    suite = ET.Element(
        "testsuite",
        name="trtmc-videoqa",
        tests=str(len(report.rows)),
        failures=str(failures),
        skipped=str(skipped),
        errors="0",
    )
    for row in report.rows:
        case = ET.SubElement(suite, "testcase", classname=f"trtmc-videoqa.{row.family or 'endpoint'}", name=row.profile)
        if row.status == "failed":
            node = ET.SubElement(case, "failure", message=f"failed at {row.failed_stage}: {row.status_reason}")
            node.text = "\n".join(f"{s.name}: {s.status} {s.detail}" for s in row.stages)
        elif row.status not in PASSING:
            ET.SubElement(case, "skipped", message=f"{row.status}: {row.status_reason}")
    ET.indent(suite)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"
