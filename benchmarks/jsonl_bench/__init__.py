"""Helpers of ``benchmarks/bench.py``: workload, baselines, jsonl_store measures, report.

Kept as a package next to the script (not inside ``jsonl_store``) so the library never
ships benchmark code, and so processes started with ``spawn`` can import the workers by name.
"""
