"""The judge's agreement with the reviewers, over the reviewed items of a run's review queue: Cohen's
kappa of the judge's pass/fail with the reviewer's ``acceptable``, and a quadratic-weighted kappa per
dimension on scores binned to five levels (``stats.kappa``); overall, per intent and per locale. Also
the CloudWatch metric data that publish them (JudgeAgreementKappa).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from pydantic import BaseModel, Field

from fmquality.domain.report import Kappa
from fmquality.schemes.mangaassist import DIMENSIONS
from fmquality.production.review import ReviewItem
from fmquality.stats.kappa import LEVELS, WeightedKappa, cohen_kappa, quadratic_weighted_kappa


def level(score: float, scale: str = "0-1") -> int:
    """Five levels: a 1-5 score is its own level; a 0-1 score is binned [0, .2) .. [.8, 1]."""
    if scale == "1-5":
        return int(min(5, max(1, round(score))))
    return min(LEVELS, int(score * LEVELS) + 1)


class AgreementSubset(BaseModel):
    subset: str  # "all", "intent:faq", "locale:ja-JP"
    reviewed: int
    pass_fail: Kappa
    dimensions: dict[str, WeightedKappa] = Field(default_factory=dict)


class JudgeAgreement(BaseModel):
    reviewed: int
    pending: int
    subsets: list[AgreementSubset] = Field(default_factory=list)

    def subset(self, name: str) -> AgreementSubset | None:
        return next((s for s in self.subsets if s.subset == name), None)


def _subset(name: str, items: list[ReviewItem]) -> AgreementSubset:
    dims: dict[str, WeightedKappa] = {}
    for d in DIMENSIONS:
        pairs = [(level(i.judge_scores[d]), level(i.reviewer_scores[d], i.reviewer_scale or "0-1"))
                 for i in items if i.judge_scores.get(d) is not None and d in i.reviewer_scores]
        if pairs:
            dims[d] = quadratic_weighted_kappa(pairs)
    return AgreementSubset(subset=name, reviewed=len(items),
                           pass_fail=cohen_kappa((i.judge_passed, bool(i.reviewer_acceptable)) for i in items),
                           dimensions=dims)


def judge_agreement(items: Sequence[ReviewItem]) -> JudgeAgreement:
    reviewed = [i for i in items if i.status == "reviewed" and i.reviewer_acceptable is not None]
    subsets = [_subset("all", reviewed)]
    for attr in ("intent", "locale"):
        groups: dict[str, list[ReviewItem]] = defaultdict(list)
        for i in reviewed:
            groups[getattr(i, attr)].append(i)
        subsets.extend(_subset(f"{attr}:{k}", v) for k, v in sorted(groups.items()))
    return JudgeAgreement(reviewed=len(reviewed), pending=len(items) - len(reviewed), subsets=subsets)


def agreement_metric_data(agreement: JudgeAgreement, min_reviewed: int = 2,
                          timestamp: datetime | None = None) -> list[dict[str, Any]]:
    """JudgeAgreementKappa (pass/fail) overall (no dimension), per Intent and per Locale;
    JudgeAgreementKappa_<dimension> (quadratic-weighted) likewise. Undefined kappas and subsets with
    fewer than ``min_reviewed`` reviewed items are not published (no data is not a kappa of 0)."""
    when = timestamp or datetime.now(timezone.utc)
    data: list[dict[str, Any]] = []
    for s in agreement.subsets:
        if s.reviewed < min_reviewed:
            continue
        dims = [] if s.subset == "all" else [{"Name": s.subset.split(":", 1)[0].capitalize(),
                                             "Value": s.subset.split(":", 1)[1]}]
        if s.pass_fail.value is not None:
            data.append({"MetricName": "JudgeAgreementKappa", "Dimensions": dims, "Value": s.pass_fail.value,
                         "Unit": "None", "Timestamp": when})
        for d, k in s.dimensions.items():
            if k.value is not None:
                data.append({"MetricName": f"JudgeAgreementKappa_{d}", "Dimensions": dims, "Value": k.value,
                             "Unit": "None", "Timestamp": when})
    return data
