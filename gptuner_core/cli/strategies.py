"""``gptuner strategies``: the search strategies and their options (from their declarations)."""

from __future__ import annotations

import argparse
import json

from gptuner_core.cli._base import Command


class StrategiesCommand(Command):
    name = "strategies"
    help = "list search strategies and their options"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("strategy", nargs="?", help="show one strategy's options")
        parser.add_argument("--json", action="store_true")

    def run(self, args: argparse.Namespace) -> int:
        from gptuner_core.cli._base import UsageError
        from gptuner_core.strategies import describe_strategies

        items = describe_strategies()
        if args.strategy:
            items = [s for s in items if s["name"] == args.strategy]
            if not items:
                names = ", ".join(s["name"] for s in describe_strategies())
                msg = f"unknown strategy '{args.strategy}' (available: {names})"
                raise UsageError(msg)
        if args.json:
            print(json.dumps(items, indent=2))
            return 0
        for s in items:
            flag = " (default)" if s["default"] else ""
            status = "" if s["available"] else f"  [unavailable: {s['reason']}]"
            print(f"{s['name']}{flag}: {s['summary']}{status}")
            for opt, spec in s["options"].items():
                choices = f" one of {spec['choices']}" if spec.get("choices") else ""
                print(f"    --strategy-option {opt}=…  {spec['description']} "
                      f"(default {spec['default']!r}{choices})")
        return 0
