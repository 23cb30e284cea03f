"""
An event-driven job loop for runpod-python 1.12 (docs/serverless-workers.md, "runpod-python's
job loop"). runpod-python's JobScaler counts a job it has just taken twice (in its queue and in
its progress set) and then sleeps 1 s before it asks for more work, and its runner looks at its
queue every 100 ms: a worker that takes one job at a time spends about a second per job however
fast its handler is. This subclass waits for events instead: the job loop asks for the next job
as soon as a slot is free, and the runner starts a job as soon as it arrives.

Use it by installing it before `runpod.serverless.start`:

    import runpod
    from event_driven_scaler import install
    install()
    runpod.serverless.start({"handler": handler})

It relies on JobScaler's internals as of runpod-python 1.12 (rp_scale.py); check it against the
version you run.
"""

import asyncio
from typing import Set

from runpod.serverless.modules import rp_scale


class EventDrivenJobScaler(rp_scale.JobScaler):
    """JobScaler that waits for a free slot and for new jobs instead of sleeping."""

    def __init__(self, config):
        super().__init__(config)
        self._slot_freed = asyncio.Event()

    def current_occupancy(self) -> int:
        # Every job taken is in job_progress from the moment it is taken until it is done; it is
        # also in jobs_queue until the runner picks it up. Count it once.
        return self.job_progress.get_job_count()

    async def set_scale(self):
        await super().set_scale()
        # get_jobs calls this first on each turn: wait here for a free slot, so that it never
        # reaches its "queue is full" sleep of 1 s.
        while self.is_alive() and self.current_concurrency - self.current_occupancy() <= 0:
            self._slot_freed.clear()
            try:
                await asyncio.wait_for(self._slot_freed.wait(), timeout=1)
            except asyncio.TimeoutError:
                pass

    async def handle_job(self, session, job):
        try:
            await super().handle_job(session, job)
        finally:
            self._slot_freed.set()

    async def run_jobs(self, session):
        tasks: Set[asyncio.Task] = set()
        getter = None
        while self.is_alive() or not self.jobs_queue.empty() or getter is not None:
            if getter is None and len(tasks) < self.current_concurrency and self.is_alive():
                getter = asyncio.ensure_future(self.jobs_queue.get())
            waiting = set(tasks) | ({getter} if getter is not None else set())
            if not waiting:
                break
            done, _ = await asyncio.wait(waiting, timeout=1, return_when=asyncio.FIRST_COMPLETED)
            if getter is not None and getter in done:
                job = getter.result()
                getter = None
                task = asyncio.create_task(self.handle_job(session, job))
                tasks.add(task)
                self.jobs_tasks[job["id"]] = task
            elif getter is not None and not self.is_alive() and self.jobs_queue.empty():
                getter.cancel()
                getter = None
            tasks.difference_update(done)
        results = await asyncio.gather(*tasks, return_exceptions=True)
        for result in results:
            if isinstance(result, Exception) and not isinstance(result, asyncio.CancelledError):
                rp_scale.log.error(f"EventDrivenJobScaler.run_jobs | Task failed: {result}")


def install():
    """Makes runpod.serverless.start use EventDrivenJobScaler (call it before start)."""
    rp_scale.JobScaler = EventDrivenJobScaler
