"""The project's grader beside math-verify's own reading of the same responses, and every disagreement.

By default the responses are a benchmark's own: each reference stated as a final answer ("The final
answer is $\\boxed{ref}$.") and each worked solution, which should all grade correct. With
``--records`` they are an evaluation's (``records.jsonl``: every greedy and sampled response). With
``--forms`` they are :data:`eval.benchmarks.form_cases.FORM_CASES` (answers in other forms of the same object,
statements a careful reader follows), each graded by its own grader kind, and the count of verdicts that
differ from the careful reader's is printed for each side.
math-verify reads a response its own way (:func:`math_verify_verdict`: its default extraction of
the last LaTeX or plain expression, no notion of statements, hedges or retractions), so a
disagreement is either a case the project's reading decides differently on purpose (see
:mod:`eval.benchmarks.graders`) or an error on one side; the list is for a human to read.

Printed: the number of responses, how many each side calls correct, the disagreements (id, which
side credits it, both extracted answers), the project's answers that could not be read (no answer,
counted apart from wrong ones) and the project's grading time per 1000 responses.

Command line::

    python -m eval.benchmarks.audit --benchmark math500 [--records results/eval/MODEL/math500/records.jsonl]
    python -m eval.benchmarks.audit --forms
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from math_verify import parse, verify

from eval.benchmarks.form_cases import FORM_CASES
from eval.benchmarks.graders import GRADERS, extract_final_answer
from eval.benchmarks.loaders import BENCHMARKS, load_benchmark


@dataclass(frozen=True)
class Case:
    """One response to grade: the problem's id, where the response comes from, it and the reference."""

    id: str
    source: str
    response: str
    reference: str


@dataclass(frozen=True)
class Verdicts:
    """Both readings of one case: each side's verdict and the answer it read (math-verify's as text)."""

    case: Case
    ours: bool
    our_answer: str | None
    theirs: bool
    their_answer: str


def math_verify_verdict(response: str, reference: str) -> tuple[bool, str]:
    """math-verify alone: the reference boxed, the response read by its default extraction; (verdict, answer)."""
    gold = parse(f"\\boxed{{{reference}}}")
    answer = parse(response)
    return bool(gold and answer and verify(gold, answer)), str(answer[-1]) if answer else ""


def benchmark_cases(benchmark: str, data_dir: Path | None = None) -> list[Case]:
    """Each problem's reference stated as a final answer, then its worked solution (where it has one)."""
    problems = load_benchmark(benchmark, data_dir=data_dir)
    cases = [Case(p.id, "reference", f"The final answer is $\\boxed{{{p.answer}}}$.", p.answer) for p in problems]
    return cases + [Case(p.id, "solution", p.solution, p.answer) for p in problems if p.solution]


def record_cases(records: Path) -> list[Case]:
    """Every greedy and sampled response of an evaluation's ``records.jsonl``."""
    cases = []
    for number, line in enumerate(records.read_text().splitlines(), 1):
        try:
            row = json.loads(line)
            cases.append(Case(row["id"], "greedy", row["greedy"]["response"], row["reference"]))
            cases += [
                Case(row["id"], f"sample {i}", s["response"], row["reference"]) for i, s in enumerate(row["samples"])
            ]
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError(
                f"{records}:{number}: not an evaluation record ({type(error).__name__}: {error})"
            ) from None
    return cases


def form_audit() -> tuple[list[Verdicts], dict[str, int], float]:
    """Both sides' verdicts on every form case (each by its own grader kind), how many of each side's verdicts
    differ from the careful reader's, and the project's grading seconds per 1000 cases."""
    verdicts, seconds = [], 0.0
    for grader in sorted({case.grader for case in FORM_CASES}):
        chosen = [case for case in FORM_CASES if case.grader == grader]
        cases = [Case(str(FORM_CASES.index(c)), c.form, c.response, c.reference) for c in chosen]
        graded, per_thousand = audit(cases, grader)
        verdicts += graded
        seconds += per_thousand * len(cases) / 1000
    expected = {case.id: FORM_CASES[int(case.id)].correct for case in (v.case for v in verdicts)}
    misread = {
        "ours": sum(v.ours != expected[v.case.id] for v in verdicts),
        "math_verify": sum(v.theirs != expected[v.case.id] for v in verdicts),
    }
    return verdicts, misread, seconds / len(verdicts) * 1000


def audit(cases: list[Case], grader: str) -> tuple[list[Verdicts], float]:
    """Both sides' verdicts on every case, and the project's grading seconds per 1000 cases."""
    grade = GRADERS[grader]
    started = time.perf_counter()
    ours = [grade(case.response, case.reference) for case in cases]
    per_thousand = (time.perf_counter() - started) / len(cases) * 1000
    verdicts = []
    for case, verdict in zip(cases, ours, strict=True):
        theirs, their_answer = math_verify_verdict(case.response, case.reference)
        verdicts.append(Verdicts(case, verdict, extract_final_answer(case.response), theirs, their_answer))
    return verdicts, per_thousand


def summary(verdicts: list[Verdicts], per_thousand: float) -> dict:
    """Counts, the disagreements and the unanswered cases, as written to ``--json``."""

    def row(v: Verdicts) -> dict:
        return {
            "id": v.case.id,
            "source": v.case.source,
            "reference": v.case.reference,
            "ours": v.ours,
            "our_answer": v.our_answer,
            "math_verify": v.theirs,
            "math_verify_answer": v.their_answer,
        }

    return {
        "responses": len(verdicts),
        "correct_ours": sum(v.ours for v in verdicts),
        "correct_math_verify": sum(v.theirs for v in verdicts),
        "unanswered_ours": sum(v.our_answer is None for v in verdicts),
        "seconds_per_1000_gradings": round(per_thousand, 3),
        "disagreements": [row(v) for v in verdicts if v.ours != v.theirs],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.benchmarks.audit", description=__doc__.split("\n\n")[0])
    graded = sorted(name for name, spec in BENCHMARKS.items() if spec.grader in GRADERS)
    chosen = parser.add_mutually_exclusive_group(required=True)
    chosen.add_argument("--benchmark", choices=graded)
    chosen.add_argument("--forms", action="store_true", help="the answer-form cases instead of a benchmark")
    parser.add_argument("--records", type=Path, help="an evaluation's records.jsonl (default: the benchmark's own)")
    parser.add_argument("--data-dir", type=Path, help="the benchmark files (default: RL_BENCHMARKS_DIR)")
    parser.add_argument("--json", type=Path, help="also write the summary here")
    args = parser.parse_args(argv)
    if args.forms and args.records:
        parser.error("--records reads an evaluation of a --benchmark, not the --forms cases")
    if args.forms:
        verdicts, misread, per_thousand = form_audit()
        report = {**summary(verdicts, per_thousand), "differ_from_careful_reader": misread}
        print(
            f"against the careful reader: the project's grader differs on {misread['ours']} cases, "
            f"math-verify on {misread['math_verify']}"
        )
    else:
        try:
            cases = record_cases(args.records) if args.records else benchmark_cases(args.benchmark, args.data_dir)
        except (OSError, ValueError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        verdicts, per_thousand = audit(cases, BENCHMARKS[args.benchmark].grader)
        report = summary(verdicts, per_thousand)
    print(
        f"{report['responses']} responses; correct: {report['correct_ours']} by the project's grader, "
        f"{report['correct_math_verify']} by math-verify; {len(report['disagreements'])} disagreements; "
        f"{report['unanswered_ours']} without an answer; {per_thousand:.3f} s per 1000 gradings"
    )
    for row in report["disagreements"]:
        credited = "ours" if row["ours"] else "math-verify"
        print(
            f"- {row['id']} ({row['source']}): only {credited} credits it; reference {row['reference']!r}, "
            f"ours read {row['our_answer']!r}, math-verify read {row['math_verify_answer']!r}"
        )
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
