"""`fmquality schema`: the JSON Schema of one dataset line."""

from __future__ import annotations

import argparse
import json
from typing import Any

from fmquality.cli.common import EXIT_PASSED


def register(sub: Any) -> None:
    sub.add_parser("schema", help="print the JSON Schema of one dataset line").set_defaults(command_fn=cmd_schema)


def cmd_schema(_args: argparse.Namespace) -> int:
    from fmquality.run.dataset import dataset_json_schema

    print(json.dumps(dataset_json_schema(), indent=2, ensure_ascii=False))
    return EXIT_PASSED
