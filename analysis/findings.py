"""The claims table in plain words (issue 37, part 7): the paragraph that opens the README's results.

    python -m analysis.claims --preset cpu-real --readme   # writes it into the README, between the claims marks

Written from analysis.claims' rows alone, so it says what the table says and changes when the rows do: the
verdict count; what MAI trades (its speed against the large model reasoning beside its accuracy against it);
which of the paper's other claims hold; where MAI's premises fail on this pair and which verdicts rest on
them; and the one-sided answers behind the agreements MAI counts. Every number carries its n.
"""
from __future__ import annotations

from collections import Counter

from analysis.claims import CLAIM, HOLDS, NOT, NOT_JUDGED, PREMISE, UNSURE, Claim

# The rows the trade-off sentence words; every other claim is counted in the next one.
TRADE_OFF = ("t10_speedup", "t10_vs_large_r", "t12_speedup", "t12_vs_target", "t12_vs_paper")
SHORT = {  # a claim's name in a sentence ({bound}: the bound's own words, so a changed bound changes the text)
    "t10_simple": "{bound} of queries agree on the Simple answers",
    "t10_reasoning": "{bound} agree after the small model's reasoning",
    "t10_transfer": "{bound} reach reasoning transfer",
    "t7": "Table 7's large model reasoning beats its Simple answer",
    "t8": "Table 8's reasoning transfer beats the large model's Simple answer",
    "t10_vs_large_s": "MAI at least as accurate as the large model's Simple answer",
    "t10_vs_full_rt": "MAI {bound} of Full RT",
    "b7": "App. B.7's attention share in {bound}",
    "t12_speculative": "Table 12's speculative decoding slower than the target alone",
}
# What a verdict resting on a premise is called where the premises sentence names it.
RESTING = {"t10_reasoning": "the agreement after reasoning", "t10_vs_large_s": "MAI against {other}",
           "t10_vs_full_rt": "MAI against {other}", "t10_vs_large_r": "MAI against {other}",
           "t12_vs_target": "Table 12's MAI against {other}"}


def words(items: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    if len(items) < 2:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def short(claim: Claim) -> str:
    return SHORT.get(claim.key, claim.title).format(bound=claim.bound.words)


def tasks_with(claim: Claim, verdict: str) -> list[str]:
    return [b for b, c in claim.cells.items() if c.verdict == verdict]


def _other(claim: Claim) -> str:
    """The system a difference row compares MAI with ('1.5B-R'), from its cells."""
    return next((c.detail["names"][1] for c in claim.cells.values() if "names" in c.detail), "")


def trade_off(found: dict[str, Claim]) -> str:
    """MAI's speedup over the large model reasoning beside its accuracy against it, task by task."""
    out = []
    speed, acc = found.get("t10_speedup"), found.get("t10_vs_large_r")
    if speed and acc and speed.cells and acc.cells:
        ns = {c.n for c in speed.cells.values()}
        per = "; ".join(f"{b} {acc.cells[b].detail['x']:.0f}% against {acc.cells[b].detail['y']:.0f}%"
                        + (f" at {speed.cells[b].estimate:.2f}x" if b in speed.cells else "") for b in acc.cells)
        out.append(f"MAI is faster than {_other(acc)} at batch 1 on {len(tasks_with(speed, HOLDS))} of "
                   f"{len(speed.cells)} tasks (n={'/'.join(map(str, sorted(ns)))} a task, by the mean latency) and "
                   f"at least as accurate on {len(tasks_with(acc, HOLDS))} of {len(acc.cells)} "
                   f"(n={'/'.join(map(str, sorted({c.n for c in acc.cells.values()})))} a task; "
                   f"{_others_said(acc)}): {per}.")
    speed, acc, paper = found.get("t12_speedup"), found.get("t12_vs_target"), found.get("t12_vs_paper")
    if speed and acc and speed.cells and acc.cells:
        parts = [f"{b} (n={c.n}) {c.detail['x']:.0f}% against {c.detail['y']:.0f}% ({c.verdict})"
                 + (f" at {speed.cells[b].estimate:.2f}x ({speed.cells[b].verdict})" if b in speed.cells else "")
                 for b, c in acc.cells.items()]
        against = ""
        if paper and paper.cells:
            against = f"; the paper's {paper.paper.split(' (')[0]} is an H100 figure, set beside ours, not judged"
        out.append(f"Table 12, with full transfer: {'; '.join(parts)}{against}.")
    return " ".join(out)


def _others_said(claim: Claim) -> str:
    """'does not hold on 2, cannot tell on 2' (the verdicts other than holds that occur)."""
    return ", ".join(f"{v} on {len(tasks_with(claim, v))}" for v in (NOT, UNSURE) if tasks_with(claim, v))


def others(claims: list[Claim]) -> str:
    """The paper's remaining claims grouped by where they hold, each with how many tasks and its n where that
    is not the usual one."""
    rest = [c for c in claims if c.kind == CLAIM and c.key not in TRADE_OFF and c.cells]
    if not rest:
        return ""
    usual = Counter(x.n for c in rest for x in c.cells.values()).most_common(1)[0][0]

    def named(c: Claim) -> str:
        ns = sorted({x.n for x in c.cells.values()})
        n = "" if ns == [usual] else f", n={'/'.join(map(str, ns))}"
        return f"{short(c)} ({len(tasks_with(c, HOLDS))} of {len(c.cells)}{n})"

    groups = (("on every task measured", [c for c in rest if len(tasks_with(c, HOLDS)) == len(c.cells)]),
              ("on some", [c for c in rest if 0 < len(tasks_with(c, HOLDS)) < len(c.cells)]),
              ("on none", [c for c in rest if not tasks_with(c, HOLDS)]))
    said = [f"{head}: {'; '.join(named(c) for c in group)}" for head, group in groups if group]
    return f"The paper's other claims (n={usual} a task unless said) hold " + "; ".join(said) + "."


def premises(claims: list[Claim]) -> str:
    """How MAI's premises fare on this pair, and which verdicts rest on a premise not shown to hold there."""
    found = {c.key: c for c in claims}
    said = []
    for c in claims:
        if c.kind == PREMISE and c.cells:
            names = next((x.detail["names"] for x in c.cells.values() if "names" in x.detail), ("", ""))
            failing = [f"{v} on {words(tasks_with(c, v))}" for v in (NOT, UNSURE) if tasks_with(c, v)]
            said.append(f"{names[0]} beats {names[1]} on {len(tasks_with(c, HOLDS))} of {len(c.cells)} tasks"
                        + (f" ({'; '.join(failing)})" if failing else ""))
    if not said:
        return ""
    weak: dict[str, list[str]] = {}  # a claim -> its tasks where a premise it rests on is not shown to hold
    for c in claims:
        for key in c.affects:
            if key in found:
                tasks = weak.setdefault(key, [])
                tasks += [b for b, x in c.cells.items() if x.verdict != HOLDS and b in found[key].cells
                          and b not in tasks]
    by_tasks: dict[tuple, list[str]] = {}
    for key, tasks in weak.items():
        if tasks:
            order = tuple(b for b in found[key].cells if b in tasks)
            by_tasks.setdefault(order, []).append(RESTING.get(key, short(found[key])).format(other=_other(found[key])))
    resting = "; ".join(f"{words(names)} on {words(list(tasks))}" for tasks, names in by_tasks.items())
    n = "/".join(map(str, sorted({x.n for c in claims if c.kind == PREMISE for x in c.cells.values()})))
    return (f"MAI's premises on this pair (n={n} a task): " + "; ".join(said) + "."
            + (f" So these verdicts rest on a premise not shown to hold: {resting}." if resting else ""))


def behind_agreements(found: dict[str, Claim]) -> str:
    """The one-sided answers MAI's agreement routes counted (a constant side; a Simple answer cut off at its
    cap on half the queries or more), with how many of those agreements were right."""
    parts = []
    for key, route in (("t10_simple", "Simple"), ("t10_reasoning", "after reasoning")):
        claim = found.get(key)
        for b, c in (claim.cells.items() if claim else ()):
            sides = [s for s in c.detail.get("sides") or [] if "second stage" not in s.who]
            said = [f"{s.who} '{s.majority.answer}' on {s.majority.count} of {s.majority.n}"
                    for s in sides if s.majority.constant]
            said += [f"{s.who} cut off at its cap on {s.cap[0]} of {s.cap[1]}" for s in sides
                     if s.cap and 2 * s.cap[0] >= s.cap[1]]
            if said:
                right = (f"{c.detail['right']} of its {c.detail['hits']} agreements right" if c.detail.get("hits")
                         else "no agreement")
                parts.append(f"{b} ({route}): {words(said)}, {right}")
    if not parts:
        return ""
    return "The agreements MAI counts rest on one-sided answers: " + "; ".join(parts) + "."


def paragraph(claims: list[Claim], preset: str) -> str:
    """The findings paragraph: the count, the trade-off, the other claims, the premises, the answers."""
    found = {c.key: c for c in claims}
    judged = [x for c in claims if c.kind == CLAIM for x in c.cells.values() if x.verdict != NOT_JUDGED]
    count = {v: sum(x.verdict == v for x in judged) for v in (HOLDS, NOT, UNSURE)}
    head = (f"On the committed `{preset}` runs {count[HOLDS]} of the paper's {len(judged)} claim-task cells hold, "
            f"{count[NOT]} do not and {count[UNSURE]} cannot tell (95% intervals).")
    parts = (head, trade_off(found), others(claims), premises(claims), behind_agreements(found))
    return " ".join(x for x in parts if x)
