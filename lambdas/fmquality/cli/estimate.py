"""`fmquality estimate`: the judge calls, tokens and cost a run would spend, before any call
(``run.estimate``)."""

from __future__ import annotations

import argparse
from typing import Any

from fmquality.cli.common import EXIT_BAD_INPUT, EXIT_PASSED, load_inputs


def register(sub: Any) -> None:
    estimate = sub.add_parser("estimate", help="expected judge calls, tokens and cost of a run, before any call")
    estimate.add_argument("--dataset", required=True, help="JSON Lines dataset")
    estimate.add_argument("--catalog", help="catalog snapshot JSON; each case gets the entries of the products it concerns")
    estimate.add_argument("--rubric", help="rubric YAML (default: the embedded mangaassist-v3)")
    estimate.add_argument("--judge-mode", choices=["per_dimension", "combined"],
                          help="default: the rubric's judge.mode")
    estimate.add_argument("--judge-model-id", help="model whose prices apply (default: the rubric's)")
    estimate.add_argument("--min-cache-tokens", type=int,
                          help="the model's minimum cacheable prompt prefix, in tokens "
                               "(default: the rubric's judge.min_cache_tokens entry for the model)")
    estimate.add_argument("--skip-invalid", action="store_true", help="estimate the valid lines only")
    estimate.add_argument("--json", action="store_true", help="print the estimate as JSON")
    estimate.set_defaults(command_fn=cmd_estimate)


def cmd_estimate(args: argparse.Namespace) -> int:
    from fmquality.run.estimate import estimate_run, format_estimate

    inputs = load_inputs(args)
    if inputs is None:
        return EXIT_BAD_INPUT
    rubric, loaded, _ = inputs
    estimate = estimate_run(loaded.cases, rubric, mode=args.judge_mode, model_id=args.judge_model_id,
                            min_cache_tokens=args.min_cache_tokens)
    print(estimate.model_dump_json(indent=2) if args.json else format_estimate(estimate))
    return EXIT_PASSED
