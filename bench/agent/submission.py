"""Writing a run's submission folder from its journal: submission.yaml, kernels/, trajectory/ (format v2).

The folder is a pure function of the journal and the run's parameters. It is built whole in the journal's folder
(under build/) and then moved into place by renames, so submissions/ never holds a half-written folder, a stray
temporary file, or a folder without a sample to submit: until the run has one, nothing is written there at all
(an empty `workloads: []` folder would fail validation and, with it, `bench ingest` for everyone).

Trajectory format v2 (bench.dataset.trajectory validates it; docs/submit.md): `trajectory/<workload_id>.jsonl`,
one object per sample, `sample` from 0 without gaps in (chain, turn) order, {"sample", "chain", "turn", "source",
"declared": {"outcome", "speedup", "lowers", "pallas_coverage"}, "tokens_in", "tokens_out", "wall_time_s",
"model_latency_s"}. `declared` is what this run's harness said; the dataset re-evaluates every source itself.

submission.yaml's `agent_run` records what the run actually did: how many samples each workload it reached got,
which planned workloads it never started, whether it completed, and why it stopped if not; `samples_per_workload`
is the most samples any workload got (the plan's N when complete). bench.dataset.validate checks that these agree
with the trajectories.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import yaml

from bench.agent.journal import Record
from bench.agent.selection import SELECTION_RULE, best_index

#: Statuses of a sample that compiled and ran: its file is a kernel (it defines `workload`), if a wrong one.
RAN = {"incorrect", "runtime_error", "timeout", "out_of_memory", "rejected"}


def ordered(records: list[Record]) -> list[Record]:
    return sorted(records, key=lambda r: (r.chain, r.turn))


def _seconds(v: float | None) -> float | None:
    return None if v is None else round(v, 3)


def trajectory_lines(
    records: list[Record], steps: dict[tuple[str, int, int], dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """One line per sample; `steps` (Autocomp, bench.agent.autocomp.annotate) adds each sample's beam step, its
    parent named by sample index (null: the XLA reference)."""
    lines = []
    rs = ordered(records)
    index = {(r.chain, r.turn): i for i, r in enumerate(rs)}
    for i, r in enumerate(rs):
        a = r.attempt
        declared: dict[str, Any] = {"outcome": a.outcome}
        if a.correct:
            declared["speedup"] = a.speedup
        if a.lowers is not None:
            declared["lowers"] = a.lowers
        if a.pallas_coverage is not None:
            declared["pallas_coverage"] = a.pallas_coverage
        line = {
            "sample": i,
            "chain": r.chain,
            "turn": r.turn,
            "source": r.source,
            "declared": declared,
            "tokens_in": r.tokens_in,
            "tokens_out": r.tokens_out,
        }
        for key, value in (("wall_time_s", r.wall_time_s), ("model_latency_s", r.model_latency_s)):
            if value is not None:
                line[key] = _seconds(value)
        step = (steps or {}).get((r.workload, r.chain, r.turn))
        if step is not None:
            parent = step["parent"]
            line["step"] = {**step, "parent": None if parent is None else index[tuple(parent)]}
        lines.append(line)
    return lines


def select(records: list[Record]) -> Record | None:
    """SELECTION_RULE (bench.agent.selection): the best correct sample, else the last one that ran, else None."""
    rs = ordered(records)
    best = best_index([r.attempt for r in rs])
    if best is not None:
        return rs[best]
    ran = [r for r in rs if r.attempt.status in RAN]
    return ran[-1] if ran else None


def run_summary(
    params: dict[str, Any], records: list[Record], stopped: str | None, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """`agent_run` of submission.yaml: what the run did, against what it planned. For Autocomp (`extra`) a workload
    is complete when its search ended (all iterations, or an early stop), whatever its count; `ended` says how,
    `calls` its model calls per kind."""
    planned = params["chains"] * params["turns"]
    counts = {w: sum(1 for r in records if r.workload == w) for w in params["workloads"]}
    ended = {w: e for w, e in (extra or {}).get("ended", {}).items() if counts.get(w)}
    complete = all(n == planned or w in ended for w, n in counts.items())
    summary: dict[str, Any] = {
        "complete": complete,
        "planned_samples_per_workload": planned,
        "samples": {w: n for w, n in counts.items() if n},
        "not_started": [w for w, n in counts.items() if not n],
    }
    if extra is not None:
        summary["ended"] = ended
        summary["calls"] = {w: k for w, k in extra.get("calls", {}).items() if counts.get(w)}
    if not complete:
        summary["stopped"] = stopped or "interrupted before every planned sample was generated"
    return summary


def metadata(params: dict[str, Any], selected: list[str], summary: dict[str, Any]) -> dict[str, Any]:
    """submission.yaml: the run's parameters say what produced the kernels; `agent_run` what it actually did."""
    shape = (
        f"{params['chains']} independent samples"
        if params["method"] == "best-of-n"
        else f"{params['chains']} chains x {params['turns']} turns"
    )
    ac = params.get("autocomp")
    if ac:
        shape = (
            f"{ac['translate_iterations']} translation + {ac['iterations'] - ac['translate_iterations']} "
            f"optimization iterations, beam {ac['beam']}, {ac['plans']} plans x {ac['implementations']} "
            f"implementations per beam member, early stop after {ac['early_stop_iters']} iteration(s) without "
            "improvement"
        )
    meta: dict[str, Any] = {
        "name": params["name"],
        "kind": "agent",
        "method": f"{params['method_title']} ({shape} per workload, as planned), run by `bench agent run`",
        "model": {"name": params["model_name"], "version": params["model_version"]},
        # the generator's kind only: an endpoint URL or a command line may name private hosts (never published)
        "agent_framework": f"bench agent run (JAXBench), generator: {params['generator']}",
        "authors": list(params["authors"]),
        "contact": params["contact"],
        "date": params["date"],
        "samples_per_workload": max(summary["samples"].values(), default=0),
        "selection_rule": SELECTION_RULE,
        "human_in_the_loop": False,
        "target_hardware": params["target_hardware"],
        "license": params["license"],
        "links": ["https://github.com/ucb-bar/autocomp"] if ac else [],
        "workloads": selected,
        "agent_run": summary,
    }
    if params.get("notes"):
        meta["notes"] = params["notes"]
    return meta


def _render(
    folder: Path,
    params: dict[str, Any],
    records: list[Record],
    stopped: str | None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Record | None]:
    """Write the whole submission into the empty `folder`; returns the selected record per workload."""
    by_workload: dict[str, list[Record]] = {w: [] for w in params["workloads"]}
    for r in records:
        by_workload.setdefault(r.workload, []).append(r)
    chosen = {w: select(rs) for w, rs in by_workload.items()}
    for w, rs in by_workload.items():
        kernel = chosen[w]
        if kernel is not None:  # a trajectory goes with its workload's kernel (bench validate)
            lines = trajectory_lines(rs, (extra or {}).get("steps"))
            text = "".join(json.dumps(line, sort_keys=True) + "\n" for line in lines)
            (folder / "trajectory").mkdir(parents=True, exist_ok=True)
            (folder / "trajectory" / f"{w}.jsonl").write_text(text)
            (folder / "kernels").mkdir(parents=True, exist_ok=True)
            (folder / "kernels" / f"{w}.py").write_text(kernel.source)
    selected = [w for w in params["workloads"] if chosen.get(w) is not None]
    meta = metadata(params, selected, run_summary(params, records, stopped, extra))
    (folder / "submission.yaml").write_text(yaml.safe_dump(meta, sort_keys=False, width=110))
    return chosen


def same_filesystem(out: Path, work: Path) -> bool:
    """Can `out` be swapped in by renames from `work` (both on one filesystem)?"""

    def device(p: Path) -> int:
        p = p.resolve()
        while not p.exists():
            p = p.parent
        return os.stat(p).st_dev

    return device(out.parent) == device(work)


def write_folder(
    out: Path,
    params: dict[str, Any],
    records: list[Record],
    work: Path,
    stopped: str | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Record | None]:
    """(Re)write the submission folder `out` from the journal's records, built in `work` (a folder of the run's own,
    on out's filesystem) and moved into place; returns the selected record per workload. When no workload has a
    sample to submit, `out` is not created (an existing one, from this run's journal, is left as it was)."""
    staging, previous = work / "folder.new", work / "folder.old"
    for leftover in (staging, previous):  # from a run killed while swapping
        shutil.rmtree(leftover, ignore_errors=True)
    staging.mkdir(parents=True)
    chosen = _render(staging, params, records, stopped, extra)
    if not any(chosen.values()):
        shutil.rmtree(staging)
        return chosen
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.exists():
        os.rename(out, previous)  # a kill between the two renames leaves no folder: the next run writes it again
    os.rename(staging, out)
    shutil.rmtree(previous, ignore_errors=True)
    return chosen
