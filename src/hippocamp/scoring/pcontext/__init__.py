"""P-ContextBench's Pass 2: the guard layer (`guard`), the judge model (`judge`), agreement with people
(`calibrate`) and the shared pieces (`rubric`: the grade record, cited ids, the run summary)."""

from hippocamp.scoring.pcontext.guard import (
    BOUNDARY_NEIGHBOURS,
    Assessment,
    Cited,
    T5Weights,
    assess,
    citation_status,
    classify_boundary,
    covers,
    grade,
    grade_t5,
    indiscriminate_limit,
    required_items,
)
from hippocamp.scoring.pcontext.rubric import (
    Grade,
    cited_ids,
    fragment_recall,
    polarity,
    relative_days,
    retrieval_recall,
    seen_ids,
    summarize,
)

__all__ = [
    "BOUNDARY_NEIGHBOURS",
    "Assessment",
    "Cited",
    "Grade",
    "T5Weights",
    "assess",
    "citation_status",
    "cited_ids",
    "classify_boundary",
    "covers",
    "fragment_recall",
    "grade",
    "grade_t5",
    "indiscriminate_limit",
    "polarity",
    "relative_days",
    "required_items",
    "retrieval_recall",
    "seen_ids",
    "summarize",
]
