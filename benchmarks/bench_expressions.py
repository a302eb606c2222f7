"""Speed of expression counting, random access and lazy iteration on huge spaces.

Run: ``.venv/bin/python benchmarks/bench_expressions.py``. Targets: counting a 200-knob ``full``
space and fetching a route by index take well under 10 ms; the first routes of a 3**200 space
come out at once (nothing is materialised).
"""

from __future__ import annotations

import time

from gptuner_core.expressions import Expression
from gptuner_core.knobs import KnobDatabase


def main() -> None:
    n = 200
    db = KnobDatabase.from_json(
        {
            "tuner_version": "bench",
            "tuner_options": [
                {"option": f"-k{i}", "allowed_values": f"-k{i}=[0|1|2]", "default_value": "1"}
                for i in range(n)
            ],
        }
    )
    text = " ".join(f"-k{i}=[0|1|2]" for i in range(n))

    t = time.perf_counter()
    expr = Expression.parse(text, db)
    parse_ms = (time.perf_counter() - t) * 1e3

    t = time.perf_counter()
    full = expr.count("full")
    count_ms = (time.perf_counter() - t) * 1e3

    t = time.perf_counter()
    it = expr.iter_routes("full")
    for _ in range(1000):
        next(it)
    iter_ms = (time.perf_counter() - t) * 1e3

    t = time.perf_counter()
    for i in range(100):
        expr.route_at("full", full // 7 * i % full)
    at_ms = (time.perf_counter() - t) * 1e3 / 100

    t = time.perf_counter()
    for i in range(100):
        expr.route_at("fast", i * 4)
    fast_at_ms = (time.perf_counter() - t) * 1e3 / 100

    print(f"{n} knobs x 3 values: full count has {len(str(full))} digits")
    print(f"parse                {parse_ms:8.3f} ms")
    print(f"count('full')        {count_ms:8.3f} ms")
    print(f"first 1000 routes    {iter_ms:8.3f} ms")
    print(f"route_at('full', i)  {at_ms:8.3f} ms per call")
    print(f"route_at('fast', i)  {fast_at_ms:8.3f} ms per call")


if __name__ == "__main__":
    main()
