"""Reports rebuilt from the artifacts alone: report.json, report.md, report.html, junit.xml, the step summary."""

from .build import build_report, frame_strip, load_rows, write_report

__all__ = ["build_report", "frame_strip", "load_rows", "write_report"]
