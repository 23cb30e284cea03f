"""
A runpod-python worker for bench/jobs (bench/README.md): answers each job at once. BENCH_MODE
picks how its job loop runs: `default` (runpod-python as it is), `concurrency` (the
concurrency_modifier workaround: 3 jobs in flight) or `event-driven`
(examples/python/event_driven_scaler.py).
"""

import os
import sys

import runpod

mode = os.environ.get("BENCH_MODE", "default")


def handler(job):
    return {"echo": job["input"].get("text")}


config = {"handler": handler}
if mode == "concurrency":
    config["concurrency_modifier"] = lambda current: 3
elif mode == "event-driven":
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "python"))
    from event_driven_scaler import install

    install()

runpod.serverless.start(config)
