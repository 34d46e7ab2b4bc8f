-- The hand-tuned comparison on $track, kept apart from the ranking: per workload with a hand-tuned
-- time, the hand-tuned speedup over XLA (workload_refs) and each ranked kernel's speed relative to hand-tuned
-- (> 1 = faster than the hand-tuned reference: its speedup over XLA divided by the hand-tuned one).
-- Never used as a ranking denominator.
SELECT
    r.workload, r.xla_ms, r.hand_tuned_ms, r.hand_tuned_speedup,
    j.submission, j.kernel_ms, j.speedup AS speedup_vs_xla,
    j.speedup / r.hand_tuned_speedup AS speedup_vs_hand_tuned
FROM workload_refs AS r
LEFT JOIN judged AS j ON j.track = r.track AND j.workload = r.workload AND j.ranked
WHERE r.track = $track AND r.hand_tuned_ms IS NOT NULL
ORDER BY r.workload, j.submission;
