"""TRTMC's aiperf_qual, spoken by this project: its evidence stream (`execution.jsonl`), its verdicts, and a check
that a checkout's own reader loads what we write. Our own code throughout, written from the format as read."""
