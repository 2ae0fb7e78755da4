"""The scale of the offline judge's semantic reading: where the similarity of an answer to the
shopper's question stands among acceptable answers (``config/data/semantic_scale.yaml``, written by
``fmquality calibrate --signals-out`` beside the signal agreement; copying it into the package is a
reviewed change, like ``judges/offline/agreement.yaml``).

A similarity is meaningful only for the model that produced it: the scale names its model, and a
reading with another model (or none) abstains instead of using it."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from fmquality.config.yamldoc import parse_model, yaml_mapping

SCALE_FILE = Path(__file__).with_name("data") / "semantic_scale.yaml"


class SemanticScaleError(ValueError):
    """The scale file is invalid; the message names the file and the field."""


class Anchors(BaseModel):
    """Similarities of acceptable answers to their question: the lowest and the median, over ``n``."""

    model_config = ConfigDict(extra="forbid")

    minimum: float = Field(ge=-1.0, le=1.0)
    median: float = Field(ge=-1.0, le=1.0)
    n: int = Field(ge=1)

    @model_validator(mode="after")
    def _ordered(self) -> "Anchors":
        if self.median <= self.minimum:
            raise ValueError("median must lie above minimum")
        return self


class SemanticScale(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str
    measured_on: list[str]
    query_answer: Anchors


def parse_semantic_scale(text: str, source: str) -> SemanticScale:
    return parse_model(SemanticScale, yaml_mapping(text, source, SemanticScaleError, "a semantic scale"),
                       source, SemanticScaleError, "a semantic scale")


@lru_cache(maxsize=1)
def semantic_scale() -> SemanticScale | None:
    """The shipped scale, or None when the package carries none."""
    try:
        text = SCALE_FILE.read_text(encoding="utf-8")
    except OSError:
        return None
    return parse_semantic_scale(text, str(SCALE_FILE))


def scale_yaml(scale: SemanticScale, command: str) -> str:
    a = scale.query_answer
    return "\n".join([
        "# Similarity of acceptable answers to the shopper's question (sentence embeddings, cosine), on the",
        "# labelled sets below: the offline judge's semantic reading is 0.5 at the lowest and near 1 from the median.",
        f"# Written by: {command}",
        f"model: {scale.model}",
        f"measured_on: [{', '.join(scale.measured_on)}]",
        f"query_answer: {{minimum: {a.minimum:.4f}, median: {a.median:.4f}, n: {a.n}}}",
    ]) + "\n"
