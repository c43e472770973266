"""junit.xml: qualified = pass, failed = failure, unsupported and blocked = skipped with the gap or reason.

One more testcase, `trtmc-videoqa.group` / `group`, carries the group line: skipped when the group is blocked, a
failure when it failed, passing when qualified; a run without TRTMC rows (the reference self-test, an endpoint run,
a comparison run) passes it with the line in `system-out`, which says what the run is and never claims a
qualification.
"""

from __future__ import annotations

from xml.etree import ElementTree as ET

from ..common.text_escape import one_line, shown_name, xml_text
from ..results import GroupLine, Report
from .details import transport_cell
from .group import FAILING

PASSING = frozenset({"aiperf-qualified", "endpoint-qualified"})
SKIPPED = frozenset({"unsupported", "blocked"})
GROUP_CLASSNAME = "trtmc-videoqa.group"


def _group_case(suite: ET.Element, group: GroupLine) -> None:
    case = ET.SubElement(suite, "testcase", classname=GROUP_CLASSNAME, name="group")
    if group.status == "blocked":
        ET.SubElement(case, "skipped", message=group.line)
    elif group.status == "failed":
        ET.SubElement(case, "failure", message=group.line).text = group.line
    else:
        ET.SubElement(case, "system-out").text = group.line


def _only_xml_characters(root: ET.Element) -> None:
    """Every text and attribute value of the tree holds only what XML 1.0 allows (a server's text may hold ESC), an
    attribute one line (a message with a line break from outside would show a line of its own)."""
    for node in root.iter():
        node.attrib = {name: xml_text(one_line(value)) for name, value in node.attrib.items()}
        if node.text:
            node.text = xml_text(node.text)


def render_junit(report: Report) -> str:
    failures = sum(1 for r in report.rows if r.status in FAILING) + (report.group.status == "failed")
    failures += len(report.unreadable)
    skipped = sum(1 for r in report.rows if r.status in SKIPPED or r.status not in PASSING | FAILING)
    skipped += report.group.status == "blocked"
    suite = ET.Element(
        "testsuite",
        name="trtmc-videoqa",
        tests=str(len(report.rows) + len(report.unreadable) + 1),
        failures=str(failures),
        skipped=str(skipped),
        errors="0",
    )
    _group_case(suite, report.group)
    for row in report.rows:
        case = ET.SubElement(
            suite, "testcase", classname=f"trtmc-videoqa.{row.family or 'endpoint'}", name=shown_name(row.profile)
        )
        if row.video_transport or row.transport_attempts:
            properties = ET.SubElement(case, "properties")
            ET.SubElement(properties, "property", name="video_transport", value=transport_cell(row))
        if row.status == "failed":
            node = ET.SubElement(case, "failure", message=f"failed at {row.failed_stage}: {row.status_reason}")
            node.text = "\n".join(f"{s.name}: {s.status} {one_line(s.detail)}" for s in row.stages)
        elif row.status == "unverified":
            ET.SubElement(case, "failure", message=f"unverified: {row.status_reason}")
        elif row.status not in PASSING:
            ET.SubElement(case, "skipped", message=f"{row.status}: {row.status_reason}")
    for damaged in report.unreadable:
        case = ET.SubElement(suite, "testcase", classname="trtmc-videoqa.unreadable", name=damaged.path)
        ET.SubElement(case, "failure", message=f"{damaged.path} could not be read: {damaged.error}")
    _only_xml_characters(suite)
    ET.indent(suite)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"
