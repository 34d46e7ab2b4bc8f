-- All current rows of one workload ($workload) on $track, with ranking status, floored score, the speedup's 95%
-- interval and timing quality, and the kernel's rank among them (kernel_ranks in base.sql: RANK semantics, only
-- correct and unexcluded kernels are ranked, the XLA baseline submission is not), its verdict against XLA
-- (speed_tests: faster | slower | indistinguishable after the Holm correction) and its compile times.
SELECT
    r.kernel_rank AS rank, coalesce(r.kernel_rank_tied, false) AS rank_tied,
    j.submission, m.name, m.kind, j.status, j.reason, j.correct, j.ranked, j.pending_flags, j.flags,
    j.baseline_ms, j.kernel_ms, j.pallas_ref_ms, j.speedup, j.speedup_ci_low, j.speedup_ci_high,
    j.timing_quality, j.timing_quality_reason, j.runs,
    greatest(coalesce(CASE WHEN j.ranked THEN j.speedup END, 1.0), 1.0) AS score,
    j.has_pallas, j.pallas_coverage, j.mostly_xla, j.correct_unflagged, j.tpu_lowering, j.readiness_check,
    j.max_abs_err, j.rel_l2_err, j.timing_method, j.sandbox, j.interpret,
    j.jax_version, j.harness_version, j.content_hash, j.evaluated_at, j.provenance,
    st.verdict AS speed_verdict, st.p_fast_holm AS faster_p_holm, st.basis AS speed_basis,
    j.compile_s_kernel, j.compile_s_baseline, j.compile_ratio, j.slow_compile
FROM judged AS j
LEFT JOIN submissions AS m USING (submission)
LEFT JOIN kernel_ranks AS r USING (track, submission, workload)
LEFT JOIN speed_tests AS st
    ON st.track = j.track AND st.submission = j.submission AND st.workload = j.workload AND st.p = 1.0
WHERE j.track = $track AND j.workload = $workload
ORDER BY r.kernel_rank NULLS LAST, j.status = 'correct' DESC, j.submission;
