"""Which degeneracies depend on the size, with the analytic full-size estimate.

The audit measures at the small size on CPU (full size needs an accelerator), but several weaknesses
scale with a dimension that SMALL shrinks. For those we state how, and what the full-size value is,
derived from the input distributions (docs/audit.md); workloads not listed behave alike at both sizes.
"""

from __future__ import annotations

SIZE_NOTES: dict[str, str] = {
    "38k": "softmax over C columns: mean output = 1/C, 1.95e-3 small (C=512) vs 1.22e-4 full (C=8192); "
    "max ~4-7e-3 full. Zeros pass the old gate at both sizes (both far below atol 1e-2).",
    "43k": "as 38k: mean output 1/C = 1.95e-3 small vs 1.22e-4 full.",
    "50k": "as 38k: mean output 1/C = 1.95e-3 small vs 1.22e-4 full.",
    "36k": "row sum ~ C/2 with spread (1/4)*sqrt(C/12)*0.02*sqrt(C): 256 +- 0.74 small vs 4096 +- 12 full. "
    "Full size: rtol slack 41 > spread, and the bf16 spacing at 4096 is 32, so the bf16 output "
    "takes only ~2 distinct values: nearly input-independent.",
    "39k": "variation across the batch ~ 1/sqrt(pixels): 28^2=784 small vs 254^2=64516 full, "
    "i.e. about 9x smaller at full size than measured here.",
    "6p": "near-uniform attention over L keys: output std ~ 0.02/sqrt(L) = 1.25e-3 small (L=256) "
    "vs 3.1e-4 full (L=4096); zeros pass the old gate at both sizes.",
    "4p": "output ~ causal running mean of v: its std falls as 0.02/sqrt(i+1); small S=256 vs full 4096, "
    "so at full size even more rows sit below atol.",
    "5p": "as 4p (rel_pos_bias std 0.01 adds little): running-mean error shrinks with S.",
    "13p": "subsampling 1/8 of T tokens has error ~ std(per-token loss)/sqrt(T/8): T=256 small vs 8192 "
    "full, so the shortcut is ~5.7x more accurate at full size than measured here.",
    "16p": "upstream's decay a = sigmoid(A_log) ~ 0.018 per step: the 16-position band misses e^-64, exact at every "
    "size. Its second distribution measured at full length (S=4096; 3 heads of one batch element, seeds "
    "1-3): the band's rel_l2 4.3-4.4 (fails); seed 1: bands of 256 and 1024 fail too (0.61; 0.045 with elements "
    "outside the tolerance), 2048 passes; the f32 impl's rel_l2 0.0025, max |diff| 0.39 of its allowance.",
    "25k": "mean(beta) independent of x at every size (GroupNorm output has zero mean per group).",
}


def size_note(workload_id: str) -> str | None:
    return SIZE_NOTES.get(workload_id.split("_", 1)[0])
