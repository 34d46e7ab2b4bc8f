-- All current rows of one workload ($workload) on $track, with ranking status and floored score.
SELECT
    j.submission, m.name, m.kind, j.status, j.reason, j.correct, j.ranked, j.pending_flags, j.flags,
    j.baseline_ms, j.kernel_ms, j.pallas_ref_ms, j.speedup,
    greatest(coalesce(CASE WHEN j.ranked THEN j.speedup END, 1.0), 1.0) AS score,
    j.has_pallas, j.correct_unflagged, j.tpu_lowering, j.max_abs_err, j.rel_l2_err, j.timing_method, j.sandbox, j.interpret,
    j.jax_version, j.harness_version, j.content_hash, j.evaluated_at, j.provenance
FROM judged AS j
LEFT JOIN submissions AS m USING (submission)
LEFT JOIN track_ranking AS k USING (track)
WHERE j.track = $track AND j.workload = $workload
-- Best first by the track's ranking kind: readiness (correct, lowers for TPU, Pallas) or speed (floored score).
ORDER BY
    CASE WHEN k.ranking = 'readiness' THEN j.correct_unflagged END DESC NULLS LAST,
    CASE WHEN k.ranking = 'readiness' THEN j.tpu_lowering = 'ok' END DESC NULLS LAST,
    CASE WHEN k.ranking = 'readiness' THEN j.has_pallas END DESC NULLS LAST,
    CASE WHEN k.ranking IS DISTINCT FROM 'readiness' THEN score END DESC NULLS LAST,
    j.submission;
