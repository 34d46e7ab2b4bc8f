-- The paper's Table 3 layout, long form: per workload of $track's suite, the XLA baseline (the median of
-- workload_baselines) and hand-tuned times, the hand-tuned speedup, and each submission's speedup over XLA (its
-- row's own ratio; NULL = no correct kernel, "—" in the paper) with its rank on the workload (kernel_ranks), its
-- verdict against XLA (speed_verdict: faster | slower | indistinguishable, Holm-adjusted; speed_tests in base.sql)
-- and compile times. $submission (NULL: every submission) keeps one submission's rows.
SELECT
    pb.workload, r.xla_ms, r.hand_tuned_ms, r.hand_tuned_speedup,
    pb.submission, m.kind, pb.best_speedup AS speedup, pb.speedup_ci_low, pb.speedup_ci_high, pb.score,
    k.kernel_rank AS rank, coalesce(k.kernel_rank_tied, false) AS rank_tied,
    pb.speed_verdict, pb.faster_p_holm, pb.speed_basis,
    pb.compile_s_kernel, pb.compile_s_baseline, pb.compile_ratio, pb.slow_compile
FROM per_benchmark_all AS pb
JOIN workload_refs AS r ON r.track = pb.track AND r.workload = pb.workload
LEFT JOIN submissions AS m USING (submission)
LEFT JOIN kernel_ranks AS k ON k.track = pb.track AND k.workload = pb.workload AND k.submission = pb.submission
WHERE pb.track = $track AND ($submission IS NULL OR pb.submission = $submission)
ORDER BY pb.workload, k.kernel_rank NULLS LAST, pb.submission;
