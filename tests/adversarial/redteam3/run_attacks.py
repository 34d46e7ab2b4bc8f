"""Red team 3: evaluate each attack of this folder at the small size, one at a time, and print the fields that
decide it (status, coverage, readiness, tpu_lowering, flags, and why). A script, not a test: the verdicts it prints
are findings against harness 17, to be turned into asserting tests once each hole is fixed.

    .venv/bin/python tests/adversarial/redteam3/run_attacks.py [name ...]
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
ATTACKS = {  # kernel file -> workload it attacks
    "attack_credit_from_twin": "8p_GEMM",
    "attack_credit_platform_switch": "8p_GEMM",
    "attack_credit_exact_rewrite": "21k_Gemm_Divide_Sum_Scaling",
    "attack_credit_scatter_body": "47k_Matmul_Add_Swish_Tanh_GELU_Hardtanh",
    "attack_revisited_output": "8p_GEMM",
    "attack_alias_hazard": "8p_GEMM",
    "attack_input_block_write": "8p_GEMM",
    "attack_input_writeback": "8p_GEMM",
    "attack_reply_not_an_object": "8p_GEMM",
    "attack_reply_deep_nesting": "8p_GEMM",
}


def evaluate(name: str, workload: str) -> dict[str, object]:
    kernel = HERE / f"{name}.py"
    cmd = [str(ROOT / ".venv/bin/bench"), "evaluate", workload, str(kernel), "--size", "small", "--json"]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900, check=False).stdout
    row = json.loads(out)
    row = row[0] if isinstance(row, list) else row
    integrity = row.get("integrity") or {}
    inspection = (integrity.get("details") or {}).get("inspection") or {}
    return {
        "status": row.get("status"),
        "coverage": row.get("pallas_coverage"),
        "readiness": row.get("readiness_check"),
        "tpu_lowering": row.get("tpu_lowering"),
        "flags": integrity.get("flags"),
        "readiness_reason": inspection.get("readiness_reason"),
        "reason": row.get("reason"),
    }


def main(names: list[str]) -> None:
    for name in names or list(ATTACKS):
        print(name, json.dumps(evaluate(name, ATTACKS[name])), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
