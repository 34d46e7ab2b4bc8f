-- One submission ($submission) on $track: every workload of the suite, "missing" where it has no row, with the
-- kernel's rank on its workload (kernel_ranks in base.sql), the speedup's 95% interval, its verdict against XLA
-- (speed_tests, Holm-corrected) and its compile times.
SELECT
    s.workload, coalesce(j.status, 'missing') AS status, j.reason, j.ranked, j.pending_flags, j.flags,
    r.kernel_rank AS rank, coalesce(r.kernel_rank_tied, false) AS rank_tied,
    j.baseline_ms, j.kernel_ms, j.speedup, j.speedup_ci_low, j.speedup_ci_high, j.timing_quality,
    j.timing_quality_reason, j.runs,
    greatest(coalesce(CASE WHEN j.ranked THEN j.speedup END, 1.0), 1.0) AS score,
    j.has_pallas, j.pallas_coverage, j.mostly_xla, j.correct_unflagged, j.tpu_lowering, j.readiness_check,
    j.max_abs_err, j.rel_l2_err, j.timing_method, j.sandbox, j.harness_version, j.content_hash, j.evaluated_at,
    j.provenance,
    st.verdict AS speed_verdict, st.p_fast_holm AS faster_p_holm, st.basis AS speed_basis,
    j.compile_s_kernel, j.compile_s_baseline, j.compile_ratio, j.slow_compile
FROM suite AS s
LEFT JOIN judged AS j
    ON j.track = s.track AND j.workload = s.workload AND j.submission = $submission
LEFT JOIN kernel_ranks AS r
    ON r.track = s.track AND r.workload = s.workload AND r.submission = $submission
LEFT JOIN speed_tests AS st
    ON st.track = s.track AND st.workload = s.workload AND st.submission = $submission AND st.p = 1.0
WHERE s.track = $track
ORDER BY s.workload;
