-- One row per submission of $track, for tracks whose ranking kind is "readiness" (track_ranking in
-- base.sql: timings that are not accelerator timings, e.g. Pallas in CPU interpret mode).
-- Rank order: kernels correct on every seed (and not excluded by a flag), then of those the kernels that
-- also lower for TPU (Mosaic; tpu_lowering = 'ok', NULL = not known), then Pallas coverage. Speed never
-- enters the order: the interpret-mode geomean and mean are returned for display only, under names that
-- say what they are, as is fast1_final (a "win" there is an interpret-mode timing). The XLA baseline
-- submission (kind 'baseline') is listed last, unranked, as on speed tracks.
WITH agg AS (
    SELECT
        submission,
        count(*) FILTER (WHERE correct_unflagged) AS correct,
        count(*) FILTER (WHERE correct_unflagged AND tpu_lowering = 'ok') AS tpu_lowering_ok,
        count(*) FILTER (WHERE correct_unflagged AND tpu_lowering <> 'ok') AS tpu_lowering_failed,
        count(*) FILTER (WHERE correct_unflagged AND tpu_lowering IS NULL) AS tpu_lowering_unknown,
        count(*) FILTER (WHERE correct_unflagged AND has_pallas) AS pallas,
        count(*) FILTER (WHERE status IS NOT NULL) AS evaluated,
        count(*) FILTER (WHERE pending_flags > 0) AS excluded,
        count(*) AS n_workloads,
        exp(avg(ln(score))) AS interpret_geomean,
        avg(score) AS interpret_mean,
        any_value(provenance) AS provenance
    FROM per_benchmark_all
    WHERE track = $track
    GROUP BY submission
)
SELECT
    CASE WHEN m.kind IS DISTINCT FROM 'baseline' THEN
        row_number() OVER (PARTITION BY m.kind IS NOT DISTINCT FROM 'baseline'
                           ORDER BY a.correct DESC, a.tpu_lowering_ok DESC, a.pallas DESC, a.submission)
    END AS rank,
    'readiness' AS ranking,
    a.submission, m.name, m.kind, m.method, m.model, a.provenance,
    a.correct, a.tpu_lowering_ok, a.tpu_lowering_failed, a.tpu_lowering_unknown, a.pallas,
    a.evaluated, a.excluded, a.n_workloads, a.interpret_geomean, a.interpret_mean,
    t.fast1_wins / a.n_workloads::DOUBLE AS fast1_final, t.samples, t.sample_correct_rate
FROM agg AS a
LEFT JOIN submissions AS m USING (submission)
LEFT JOIN trajectory_summary AS t ON t.track = $track AND t.submission = a.submission
ORDER BY rank NULLS LAST, a.submission;
