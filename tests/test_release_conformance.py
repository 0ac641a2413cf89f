"""The HippoCamp release's evaluators on 17 edge cases, restated from the conformance fixture
(``conformance/hippocamp-release``: what the release's ``evaluate.py`` and ``run_evaluation.py`` output
at commit e7eda45, run offline with no judge configured). Every row and aggregate must match to 1e-9."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hippocamp.cli import main
from hippocamp.scoring.hippocamp_io import ReleaseFile, read_release, score_release
from hippocamp.scoring.release import clean_list, file_list_metrics, parse_pred_score

G = "Documents/Legal/Guide to attending court.pdf"
M = "Mail/Inbox/Re lease.eml"
# (query_id, answer, ground truth, gold files, agent files)
CASES: list[tuple[str, str, str, Any, Any]] = [
    ("c01_exact", "Dress neatly.", "Dress neatly and appropriately for court.", [G], [G]),
    ("c02_partial", "EUR 1,450", "EUR 1,450", [G, M], [G, "Pictures/IMG_2041.png", "Notes/x.md"]),
    ("c03_dup_pred", "EUR 1,400", "EUR 1,450", [G, M], [G, G, G]),
    ("c04_dotslash", "12 March 2024", "2024-03-12", [G], ["./" + G]),
    ("c05_leading_slash", "", "Dress neatly.", [G], ["/" + G]),
    ("c06_backslash", "x", "y", [G], [G.replace("/", "\\")]),
    ("c07_whitespace", "x", "y", [G], [f" {G} "]),
    ("c08_case", "x", "y", [G], [G.lower()]),
    ("c09_empty_pred", "x", "y", [G], []),
    ("c10_empty_gold", "x", "y", [], [G]),
    ("c11_null_gold", "x", "y", None, [G]),
    ("c12_pred_string", "x", "y", [G, M], f"{G}, {M}"),
    ("c13_pred_blank", "x", "y", [G], [G, "", None]),
    ("c14_container_abs", "x", "y", [G], ["/hippocamp/data/" + G]),
    ("c15_double_slash", "x", "y", [G], [G.replace("/", "//", 1)]),
    ("c16_dup_gold", "x", "y", [G, G, M], [G]),
    ("c17_null_pred", "x", "y", [G], None),
]
THIRD, HALF, TWO_THIRDS = 1 / 3, 0.5, 2 / 3
# (precision, recall, f1) per row: evaluate.py, run_evaluation.py (None: left out of the file metrics)
EVALUATE = {"c01_exact": (1, 1, 1), "c02_partial": (THIRD, HALF, 0.4), "c03_dup_pred": (1, HALF, TWO_THIRDS),
            "c07_whitespace": (1, 1, 1), "c11_null_gold": None, "c13_pred_blank": (1, 1, 1),
            "c16_dup_gold": (1, HALF, TWO_THIRDS)}  # fmt: skip
RUN_EVALUATION = {"c01_exact": (1, 1, 1), "c02_partial": (THIRD, HALF, 0.4), "c03_dup_pred": (1, HALF, TWO_THIRDS),
                  "c10_empty_gold": None, "c11_null_gold": None, "c13_pred_blank": (THIRD, 1, HALF),
                  "c16_dup_gold": (1, HALF, TWO_THIRDS)}  # fmt: skip
ZERO = (0.0, 0.0, 0.0)


def evaluate_rows() -> list[dict[str, Any]]:
    return [{"query_id": q, "question": f"question {q}", "answer": a, "ground_truth": t, "ground_file_list": g,
             "agent_file_list": p, "time_ms": 1000} for q, a, t, g, p in CASES]  # fmt: skip


def run_query_rows() -> list[dict[str, Any]]:
    return [{"query_id": q, "query": f"question {q}", "answer": a, "ground_truth": t, "file_list": g,
             "retrieved_file_list": p, "execution_time_ms": 1000} for q, a, t, g, p in CASES]  # fmt: skip


def _file(rows: list[dict[str, Any]], tmp_path: Path, name: str) -> ReleaseFile:
    path = tmp_path / name
    path.write_text(json.dumps(rows), encoding="utf-8")
    return read_release(path)


def _prf(metrics: dict[str, float] | None) -> tuple[float, float, float] | None:
    return None if metrics is None else (metrics["precision"], metrics["recall"], metrics["f1_score"])


def _close(got: tuple[float, ...] | None, want: tuple[float, ...] | None) -> bool:
    if got is None or want is None:
        return got is want
    return all(abs(a - b) <= 1e-9 for a, b in zip(got, want, strict=True))


def test_evaluate_py_rows_and_aggregate(tmp_path: Path) -> None:
    found = _file(evaluate_rows(), tmp_path, "rows.json")
    assert found.shape == "evaluate" and not found.errors and len(found.rows) == 17
    results, aggregate = asyncio.run(score_release(found, None, "release"))
    by_id = {r["query_id"]: r for r in results}
    for qid, *_ in CASES:
        assert _close(_prf(by_id[qid]["file_list_metrics"]), EVALUATE.get(qid, ZERO)), qid
        assert by_id[qid]["judge"]["pred"] == "no"
        status = "error_no_answer" if qid == "c05_leading_slash" else "error_not_configured"
        assert by_id[qid]["judge"]["api_status"] == status
    # what the release writes back: cleaned lists, a string kept as a string, a null gold kept null
    assert by_id["c03_dup_pred"]["agent_file_list"] == [G]
    assert by_id["c07_whitespace"]["agent_file_list"] == [G]
    assert by_id["c13_pred_blank"]["agent_file_list"] == [G]
    assert by_id["c16_dup_gold"]["ground_file_list"] == [G, M]
    assert by_id["c12_pred_string"]["agent_file_list"] == f"{G}, {M}"
    assert by_id["c11_null_gold"]["ground_file_list"] is None and by_id["c17_null_pred"]["agent_file_list"] is None
    files = aggregate["file_list_metrics"]
    assert files["total_evaluated"] == 16
    assert files["average_f1_score"] == pytest.approx(0.29583333333333334, abs=1e-9)
    assert files["average_recall"] == pytest.approx(0.28125, abs=1e-9)
    assert files["average_precision"] == pytest.approx(1 / 3, abs=1e-9)
    assert files["file_hit_rate"] == pytest.approx(0.28125, abs=1e-9)
    judge = aggregate["metrics"]["llm_judge"]
    assert judge == {"mean": 0.0, "min": 0, "max": 0, "count": 17, "yes_count": 0, "no_count": 17, "pass_rate": 0.0,
                     "avg_latency_ms": 1000.0}  # fmt: skip
    assert aggregate["total_queries"] == 17
    # the two judge-failure policies side by side: nothing judged, so ours has no accuracy at all
    assert aggregate["hippocamp"]["accuracy"] is None and aggregate["hippocamp"]["accuracy_failures_as_no"] == 0.0


def test_run_evaluation_py_rows_and_summary(tmp_path: Path) -> None:
    found = _file(run_query_rows(), tmp_path, "summary_20260101_000000.json")
    assert found.shape == "run_query" and not found.errors
    results, summary = asyncio.run(score_release(found, None, "release-run-evaluation"))
    by_id = {r["query_id"]: r for r in results}
    for qid, *_ in CASES:
        assert _close(_prf(by_id[qid]["file_list_metrics"]), RUN_EVALUATION.get(qid, ZERO)), qid
    files = summary["file_list_metrics"]
    assert files["total_evaluated"] == 15
    assert files["average_f1_score"] == pytest.approx(0.21555555555555553, abs=1e-9)
    assert files["average_recall"] == pytest.approx(0.23333333333333334, abs=1e-9)
    assert files["average_precision"] == pytest.approx(0.24444444444444444, abs=1e-9)
    assert summary["execution_time"] == {"count": 17, "total_ms": 17000, "mean_ms": 1000.0, "min_ms": 1000,
                                         "max_ms": 1000}  # fmt: skip
    assert summary["metrics"]["exact_match"]["mean"] == pytest.approx(1 / 17, abs=1e-9)
    assert summary["metrics"]["covered_exact_match"]["mean"] == pytest.approx(1 / 17, abs=1e-9)
    assert summary["total_queries"] == 17


def test_hippocamp_convention_normalises_and_counts_every_row(tmp_path: Path) -> None:
    found = _file(evaluate_rows(), tmp_path, "rows.json")
    results, aggregate = asyncio.run(score_release(found, None, "hippocamp"))
    assert aggregate["n"] == 17 and aggregate["unscored"] == 17 and aggregate["accuracy"] is None
    by_id = {r["query_id"]: r["file_list_metrics"]["f1_score"] for r in results}
    for qid in ("c04_dotslash", "c05_leading_slash", "c06_backslash", "c07_whitespace", "c13_pred_blank",
                "c15_double_slash"):  # fmt: skip
        assert by_id[qid] == 1.0, qid  # paths normalised, a null entry no path
    assert by_id["c14_container_abs"] == 1.0  # the profile's mount in the release's image (and our jail)
    assert by_id["c08_case"] == 0.0 and by_id["c10_empty_gold"] == 0.0
    assert by_id["c11_null_gold"] == 0.0  # counted, not left out
    assert by_id["c12_pred_string"] == 1.0  # a string of comma-separated paths read as those paths
    # c01 1 + c02 .4 + c03 2/3 + c04-c07 1 x 4 + c12 1 + c13 1 + c14 1 + c15 1 + c16 2/3, over all 17 rows
    # (before the release conventions existed, a null entry became the path "None": .5529)
    assert aggregate["f1_score"] == pytest.approx((9 + 0.4 + 4 / 3) / 17, abs=1e-9)  # c14 counts since #21


def test_the_release_pieces_alone() -> None:
    assert clean_list([" a ", None, "", "a", 3]) == ["a", "3"] and clean_list("a,b") is None
    assert file_list_metrics(["ab"], "ab") == {"f1_score": 0.0, "recall": 0.0, "precision": 0.0}  # chars vs a path
    assert file_list_metrics(["a", "b"], ["a", "a", ""])["precision"] == 0.5  # "" is a predicted file
    with pytest.raises(ValueError, match="field pred"):
        file_list_metrics(["a"], 5)
    # the judge's reply as the release reads it
    assert parse_pred_score('{"pred": "YES", "score": 9}') == parse_pred_score('{"pred":"yes","score":5}')
    assert parse_pred_score('{"pred": "maybe", "score": "4"}').pred == "no"
    read = parse_pred_score('Sure. "pred": yes, "score": 4 (no JSON)')
    assert (read.pred, read.score, read.found) == ("yes", 4, True)
    garbage = parse_pred_score("I cannot judge this.")
    assert (garbage.pred, garbage.score, garbage.found) == ("no", 0, False)
    assert parse_pred_score('{"pred": "yes", "score": 4.9}').score == 4
    assert parse_pred_score('{"pred": "yes", "score": 4, "rationale": " fine "}').rationale == "fine"


def test_cli_scores_release_files_and_reports_bad_rows(tmp_path: Path) -> None:
    rows = [*evaluate_rows(), {"query_id": "bad", "answer": 5, "ground_truth": "y"}, [1]]
    path = tmp_path / "rows.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    result = CliRunner().invoke(main, ["score", "--hippocamp-io", str(path), "--convention", "release", "--no-judge",
                                       "--json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert f"{path}: row 18 (query_id 'bad'): field answer: expected text or null, found int" in result.output
    assert f"{path}: row 19: expected a JSON object, found list" in result.output
    written = json.loads((tmp_path / "rows.release.json").read_text())
    assert len(written) == 17 and written[0]["judge"]["api_status"] == "error_not_configured"
    aggregate = json.loads((tmp_path / "rows.release.aggregate.json").read_text())
    assert aggregate["file_list_metrics"]["average_f1_score"] == pytest.approx(0.29583333333333334, abs=1e-9)
    assert len(aggregate["hippocamp"]["invalid_rows"]) == 2
    # run_query.py summaries are read too (the `query` alias), under any convention
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps(run_query_rows()), encoding="utf-8")
    result = CliRunner().invoke(main, ["score", "--hippocamp-io", str(summary), "--convention",
                                       "release-run-evaluation", "--no-judge"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "file F1 21.6% over 15 rows" in result.output and "run_query rows" in result.output
    result = CliRunner().invoke(main, ["score", "--hippocamp-io", str(summary), "--judge-mode", "facts"])
    assert result.exit_code == 0, result.output
    only_bad = tmp_path / "bad.json"
    only_bad.write_text(json.dumps([[1]]), encoding="utf-8")
    result = CliRunner().invoke(main, ["score", "--hippocamp-io", str(only_bad), "--no-judge"])
    assert result.exit_code == 2 and "no row can be scored" in result.output


# -- the release's judge, verbatim ----------------------------------------------------------------------
def test_release_judge_requests_and_caps() -> None:
    from hippocamp.scoring.judge import release_messages

    for script, caps in (("evaluate.py", {"simple": 256, "detailed": 256}),
                         ("run_evaluation.py", {"simple": 64, "detailed": 512})):  # fmt: skip
        for name, cap in caps.items():
            messages, got = release_messages(f"release-{name}", "Q?", "EUR {1,450}", "A", script)
            assert got == cap and [m["role"] for m in messages] == ["system", "user"]
            user = messages[1]["content"]
            assert "Question:\nQ?" in user and "Ground Truth:\nEUR {1,450}" in user and "Model Answer:\nA" in user
            assert "'pred'" in messages[0]["content"] or '"pred"' in messages[0]["content"]
    # the release's YAML detailed template cannot go through str.format (KeyError '"pred"'): its intent
    messages, _ = release_messages("release-detailed", "Q?", "G", "A", "run_evaluation.py")
    assert (
        messages[1]["content"]
        .rstrip()
        .endswith('{"pred": "yes/no", "score": <0-5>, "rationale": "<2-4 sentence summary>"}')
    )
    messages, _ = release_messages("release-detailed", "Q?", "G", "A", "evaluate.py")
    assert messages[1]["content"].endswith('{"pred":"yes/no","score":<0-5>,"rationale":"<2-4 sentence summary>"}')


def test_release_judge_verdicts_and_policies(tmp_path: Path) -> None:
    from hippocamp.models import get_model
    from hippocamp.scoring.judge import Judge

    replies = {"yes": '{"pred":"yes","score":4}', "chatter": "Looks right to me.", "no": "pred: no, score: 1"}

    def reply(request: Any) -> str:  # by the answer graded
        return next(v for k, v in replies.items() if f"Model Answer:\n{k}" in request.messages[1]["content"])

    model = get_model("mock", outputs=reply)
    judge = Judge(model, "release-simple")
    assert judge.mode == "release-simple"
    yes = asyncio.run(judge.judge("Q?", "EUR 1,450", "yes"))
    assert (yes.correct, yes.score, yes.status) == (True, 4, "ok")
    request = model.backend.requests[-1]
    assert request.max_tokens == 256 and request.json_schema is None and request.temperature == 0
    chatter = asyncio.run(judge.judge("Q?", "EUR 1,450", "chatter"))
    assert chatter.correct is None and chatter.status == "unscored" and "reads it as no" in (chatter.error or "")
    no = asyncio.run(judge.judge("Q?", "EUR 1,450", "no"))
    assert (no.correct, no.score) == (False, 1)
    assert Judge(model, "release-detailed", script="run_evaluation.py").mode == "release-detailed@run_evaluation"
    robust = Judge(model, "robust", template="release-simple")
    assert robust.mode == "robust+release-simple"
    # the layer decides where it is sure: a contradicted figure is wrong without asking the model
    asked = len(model.backend.requests)
    wrong = asyncio.run(robust.judge("What is the rent?", "EUR 1,450", "yes, EUR 1,900"))
    assert wrong.correct is False and wrong.decided_by == "facts" and len(model.backend.requests) == asked
    with pytest.raises(ValueError, match="no model"):
        Judge(None, "facts", template="release-simple")

    # over a release file: both policies side by side
    rows = [{"query_id": q, "question": "Q?", "answer": a, "ground_truth": "EUR 1,450", "ground_file_list": [],
             "agent_file_list": []} for q, a in (("1", "yes"), ("2", "chatter"), ("3", "no"))]  # fmt: skip
    found = _file(rows, tmp_path, "j.json")
    _, ours = asyncio.run(score_release(found, judge, "hippocamp"))
    assert ours["accuracy"] == 0.5 and ours["accuracy_failures_as_no"] == pytest.approx(1 / 3)
    results, theirs = asyncio.run(score_release(found, judge, "release"))
    assert theirs["metrics"]["llm_judge"]["pass_rate"] == pytest.approx(1 / 3)
    assert [r["judge"]["pred"] for r in results] == ["yes", "no", "no"]
    assert [r["judge"]["api_status"] for r in results] == ["success", "error", "success"]


def test_evaluator_outputs_are_read_back(tmp_path: Path) -> None:
    found = _file(run_query_rows(), tmp_path, "summary.json")
    results, _ = asyncio.run(score_release(found, None, "release-run-evaluation"))
    out = tmp_path / "evaluation.json"
    out.write_text(json.dumps({"results": results}), encoding="utf-8")  # wrapped, as some release files are
    back = read_release(out)
    assert back.shape == "results" and len(back.rows) == 17 and not back.errors
    _, aggregate = asyncio.run(score_release(back, None, "hippocamp"))
    assert aggregate["n"] == 17 and aggregate["hippocamp"]["answer_metrics"]["exact_match"]["mean"] == pytest.approx(
        1 / 17
    )


def test_cli_choices_are_the_scoring_names() -> None:
    from hippocamp.cli import score as cli_score
    from hippocamp.scoring.judge import TEMPLATES
    from hippocamp.scoring.release import CONVENTIONS

    assert cli_score.CONVENTIONS == CONVENTIONS and cli_score.TEMPLATES == TEMPLATES
