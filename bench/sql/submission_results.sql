-- One submission ($submission) on $track: every workload of the suite, "missing" where it has no row, with the
-- kernel's rank on its workload (kernel_ranks in base.sql) and the speedup's 95% interval.
SELECT
    s.workload, coalesce(j.status, 'missing') AS status, j.reason, j.ranked, j.pending_flags, j.flags,
    r.kernel_rank AS rank, coalesce(r.kernel_rank_tied, false) AS rank_tied,
    j.baseline_ms, j.kernel_ms, j.speedup, j.speedup_ci_low, j.speedup_ci_high, j.timing_quality,
    j.timing_quality_reason, j.runs,
    greatest(coalesce(CASE WHEN j.ranked THEN j.speedup END, 1.0), 1.0) AS score,
    j.has_pallas, j.pallas_coverage, j.mostly_xla, j.correct_unflagged, j.tpu_lowering, j.readiness_check,
    j.max_abs_err, j.rel_l2_err, j.timing_method, j.sandbox, j.harness_version, j.content_hash, j.evaluated_at,
    j.provenance
FROM suite AS s
LEFT JOIN judged AS j
    ON j.track = s.track AND j.workload = s.workload AND j.submission = $submission
LEFT JOIN kernel_ranks AS r
    ON r.track = s.track AND r.workload = s.workload AND r.submission = $submission
WHERE s.track = $track
ORDER BY s.workload;
