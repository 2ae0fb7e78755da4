"""The per-item handlers' input events. The parsing lives in the core (``fmquality.run.item_events``);
this name is kept so the handlers read ``from handlers.events import ...``."""

from fmquality.run.item_events import (CompositeErrorEvent, CompositeEvent, GenerateEvent, ScoreCaseEvent,
                                        ScoreEvent, StepFunctionsError, check_category, check_dimension,
                                        parse_composite_event)

__all__ = ["CompositeErrorEvent", "CompositeEvent", "GenerateEvent", "ScoreCaseEvent", "ScoreEvent",
           "StepFunctionsError", "check_category", "check_dimension", "parse_composite_event"]
