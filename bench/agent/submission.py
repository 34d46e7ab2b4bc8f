"""Writing a run's submission folder from its journal: submission.yaml, kernels/, trajectory/ (format v2).

The folder is a pure function of the journal and the run's parameters, written whole each time (files replaced
atomically), so an interrupted and resumed run and an uninterrupted one leave the same bytes.

Trajectory format v2 (bench.dataset.trajectory validates it; docs/submit.md; no submission.yaml key): `trajectory/<workload_id>.jsonl`, one object per
sample, `sample` from 0 without gaps in (chain, turn) order, {"sample", "chain", "turn", "source",
"declared": {"outcome", "speedup"}, "tokens_in", "tokens_out"}. `declared` is what this run's harness said; the
dataset re-evaluates every source itself.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import yaml

from bench.agent.journal import Record

SELECTION_RULE = ("fastest correct sample: the highest speedup over XLA the harness measured during the run "
                  "(ties: the earlier sample); a workload without a correct sample submits its last sample that ran "
                  "(it ranks as 1x), so every trajectory has its kernel; a workload none of whose samples ran is left out")
#: Statuses of a sample that compiled and ran: its file is a kernel (it defines `workload`), if a wrong one.
RAN = {"incorrect", "runtime_error", "timeout", "out_of_memory", "rejected"}


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def ordered(records: list[Record]) -> list[Record]:
    return sorted(records, key=lambda r: (r.chain, r.turn))


def trajectory_lines(records: list[Record]) -> list[dict[str, Any]]:
    lines = []
    for i, r in enumerate(ordered(records)):
        declared: dict[str, Any] = {"outcome": r.attempt.outcome}
        if r.attempt.correct:
            declared["speedup"] = r.attempt.speedup
        lines.append({"sample": i, "chain": r.chain, "turn": r.turn, "source": r.source, "declared": declared,
                      "tokens_in": r.tokens_in, "tokens_out": r.tokens_out})
    return lines


def select(records: list[Record]) -> Record | None:
    """SELECTION_RULE: the fastest correct sample, else the last one that ran, else None."""
    best = None
    for r in ordered(records):
        if r.attempt.correct and (best is None or r.attempt.speedup > best.attempt.speedup):
            best = r
    ran = [r for r in ordered(records) if r.attempt.status in RAN]
    return best or (ran[-1] if ran else None)


def metadata(params: dict[str, Any], selected: list[str]) -> dict[str, Any]:
    """submission.yaml: the run's parameters say what produced the kernels."""
    per = params["chains"] * params["turns"]
    shape = (f"{params['chains']} independent samples" if params["method"] == "best-of-n"
             else f"{params['chains']} chains x {params['turns']} turns")
    meta: dict[str, Any] = {
        "name": params["name"],
        "kind": "agent",
        "method": f"{params['method_title']} ({shape} per workload), run by `bench agent run`",
        "model": {"name": params["model_name"], "version": params["model_version"]},
        "agent_framework": f"bench agent run (JAXBench), generator: {params['generator']}",
        "authors": list(params["authors"]),
        "contact": params["contact"],
        "date": params["date"],
        "samples_per_workload": per,
        "selection_rule": SELECTION_RULE,
        "human_in_the_loop": False,
        "target_hardware": params["target_hardware"],
        "license": params["license"],
        "links": [],
        "workloads": selected,
    }
    if params.get("notes"):
        meta["notes"] = params["notes"]
    return meta


def write_folder(out: Path, params: dict[str, Any], records: list[Record]) -> dict[str, Record | None]:
    """(Re)write the submission folder; returns the selected record per workload."""
    by_workload: dict[str, list[Record]] = {w: [] for w in params["workloads"]}
    for r in records:
        by_workload.setdefault(r.workload, []).append(r)
    chosen = {w: select(rs) for w, rs in by_workload.items()}
    kernels = out / "kernels"
    for w, rs in by_workload.items():
        if chosen[w] is not None:  # a trajectory goes with its workload's kernel (bench validate)
            text = "".join(json.dumps(line, sort_keys=True) + "\n" for line in trajectory_lines(rs))
            _write(out / "trajectory" / f"{w}.jsonl", text)
            _write(kernels / f"{w}.py", chosen[w].source)
    selected = [w for w in params["workloads"] if chosen.get(w) is not None]
    meta = metadata(params, selected)
    _write(out / "submission.yaml", yaml.safe_dump(meta, sort_keys=False, width=110))
    return chosen
