-- One submission ($submission) on $track: every workload of the suite, "missing" where it has no row.
SELECT
    s.workload, coalesce(j.status, 'missing') AS status, j.reason, j.ranked, j.pending_flags, j.flags,
    j.baseline_ms, j.kernel_ms, j.speedup,
    greatest(coalesce(CASE WHEN j.ranked THEN j.speedup END, 1.0), 1.0) AS score,
    j.has_pallas, j.correct_unflagged, j.tpu_lowering, j.max_abs_err, j.rel_l2_err, j.timing_method, j.sandbox,
    j.content_hash, j.evaluated_at, j.provenance
FROM suite AS s
LEFT JOIN judged AS j
    ON j.track = s.track AND j.workload = s.workload AND j.submission = $submission
WHERE s.track = $track
ORDER BY s.workload;
