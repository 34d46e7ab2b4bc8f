-- One row per submission of $track, for tracks whose ranking kind is "readiness" (track_ranking in
-- base.sql: timings that are not accelerator timings, e.g. Pallas in CPU interpret mode).
-- Rank keys, in order (SQL RANK: equal keys, equal rank, rank_tied says so; the name never breaks a tie):
--   1. correct: kernels correct on every seed and not excluded by a flag;
--   2. tpu_lowering_ok: of those, kernels that also lower for TPU (Mosaic; tpu_lowering = 'ok', NULL = not known);
--   3. readiness_verified: of those, kernels whose runnable and TPU programs were shown to be the same computation
--      outside the Pallas kernels (readiness_check = 'verified'; 'unverified' and unknown rank below);
--   4. pallas_coverage: the suite's mean share of the work inside Mosaic kernels (a workload without a correct
--      kernel, or with an unknown coverage, counts 0); correct kernels below mostly_xla_below() (0.5) are
--      counted as mostly_xla;
--   5. interpret_geomean: the floored geomean of interpret-mode speedups, the last key only (on CPU it is an
--      XLA:CPU emulation's time, not a TPU speed).
-- Keys are compared at 9 decimals. Every rate carries its 95% Wilson interval as <field>_ci = [low, high] of the
-- share (correct_ci and tpu_lowering_ok_ci of n_workloads, fast1_final_ci, sample_correct_rate_ci; wilson_ci). The XLA baseline submission (kind 'baseline') is listed last, unranked.
WITH agg AS (
    SELECT
        submission,
        count(*) FILTER (WHERE correct_unflagged) AS correct,
        count(*) FILTER (WHERE correct_unflagged AND tpu_lowering = 'ok') AS tpu_lowering_ok,
        count(*) FILTER (WHERE correct_unflagged AND tpu_lowering <> 'ok') AS tpu_lowering_failed,
        count(*) FILTER (WHERE correct_unflagged AND tpu_lowering IS NULL) AS tpu_lowering_unknown,
        count(*) FILTER (WHERE correct_unflagged AND tpu_lowering = 'ok' AND readiness_check = 'verified')
            AS readiness_verified,
        count(*) FILTER (WHERE correct_unflagged AND tpu_lowering = 'ok' AND readiness_check IS DISTINCT FROM 'verified')
            AS readiness_unverified,
        avg(CASE WHEN correct_unflagged THEN coalesce(pallas_coverage, 0.0) ELSE 0.0 END) AS pallas_coverage,
        count(*) FILTER (WHERE correct_unflagged AND mostly_xla) AS mostly_xla,
        count(*) FILTER (WHERE correct_unflagged AND pallas_coverage IS NULL) AS coverage_unknown,
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
),
keyed AS (
    SELECT a.*, m.name, m.kind, m.method, m.model, m.kind IS NOT DISTINCT FROM 'baseline' AS sanity,
           round(a.pallas_coverage, 9) AS k4, round(a.interpret_geomean, 9) AS k5
    FROM agg AS a
    LEFT JOIN submissions AS m USING (submission)
)
SELECT
    CASE WHEN NOT a.sanity THEN
        rank() OVER (PARTITION BY a.sanity ORDER BY a.correct DESC, a.tpu_lowering_ok DESC, a.readiness_verified DESC,
                                                  a.k4 DESC, a.k5 DESC)
    END AS rank,
    NOT a.sanity AND count(*) OVER (PARTITION BY a.sanity, a.correct, a.tpu_lowering_ok, a.readiness_verified, a.k4,
                                                 a.k5) > 1 AS rank_tied,
    'readiness' AS ranking,
    a.submission, a.name, a.kind, a.method, a.model, a.provenance,
    a.correct, a.tpu_lowering_ok, a.tpu_lowering_failed, a.tpu_lowering_unknown, a.readiness_verified,
    a.readiness_unverified, a.pallas_coverage, a.mostly_xla, a.coverage_unknown, a.pallas,
    a.evaluated, a.excluded, a.n_workloads, a.interpret_geomean, a.interpret_mean,
    wilson_ci(a.correct, a.n_workloads) AS correct_ci, wilson_ci(a.tpu_lowering_ok, a.n_workloads) AS tpu_lowering_ok_ci,
    t.fast1_wins / a.n_workloads::DOUBLE AS fast1_final,
    CASE WHEN t.fast1_wins IS NOT NULL THEN wilson_ci(t.fast1_wins, a.n_workloads) END AS fast1_final_ci,
    t.samples, t.sample_correct_rate, t.sample_correct_rate_ci
FROM keyed AS a
LEFT JOIN trajectory_summary AS t ON t.track = $track AND t.submission = a.submission
ORDER BY rank NULLS LAST, a.submission;
