"""The recorded evaluator, taking ``delay_s`` per candidate: a fault-injection window for tests
of workers dying with a candidate in flight (the answers are the recording's, unchanged)."""

from __future__ import annotations

import os
import time

from gptuner_core.engine.evaluate.recorded import RecordedEvaluator


class SlowRecordedEvaluator(RecordedEvaluator):
    #: seconds per candidate; ``$GPTUNER_TEST_REPLAY_DELAY_S`` when built by the tuner
    delay_s = 0.0

    def __init__(self, recording, delay_s: float | None = None) -> None:  # type: ignore[no-untyped-def]
        super().__init__(recording)
        env = os.environ.get("GPTUNER_TEST_REPLAY_DELAY_S")
        self.delay_s = delay_s if delay_s is not None else float(env or 0.0)

    def evaluate(self, proposal, number, history, artifacts, on_phase):  # type: ignore[no-untyped-def]
        time.sleep(self.delay_s)
        return super().evaluate(proposal, number, history, artifacts, on_phase)
