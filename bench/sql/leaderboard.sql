-- Ranking kind "speed" (tracks of accelerator timings; see track_ranking in base.sql).
-- One row per submission of $track, best first (the baseline sanity row last, unranked): geomean and mean of the floored per-benchmark
-- scores over the track's suite, correct and Pallas counts, excluded rows, end-of-budget fast1 and
-- the pooled per-sample correct rate (both from measured samples only: declared ones never enter the leaderboard). Table-2-style aggregates the paper reports without per-kernel
-- numbers are appended as they were reported (provenance says so).
WITH agg AS (
    SELECT
        submission,
        exp(avg(ln(score))) AS geomean,
        avg(score) AS mean,
        count(*) FILTER (WHERE ranked) AS correct,
        count(*) FILTER (WHERE ranked AND has_pallas) AS pallas,
        count(*) FILTER (WHERE ranked AND score > 1.0) AS beats_xla,
        count(*) FILTER (WHERE status IS NOT NULL) AS evaluated,
        count(*) FILTER (WHERE pending_flags > 0) AS excluded,
        count(*) AS n_workloads,
        any_value(provenance) AS provenance
    FROM per_benchmark_all
    WHERE track = $track
    GROUP BY submission
),
measured AS (
    SELECT
        a.submission, m.name, m.kind, m.method, m.model, a.provenance,
        a.geomean, a.mean, a.correct, a.pallas, a.beats_xla, a.evaluated, a.excluded, a.n_workloads,
        t.fast1_wins / a.n_workloads::DOUBLE AS fast1_final,
        t.samples,
        t.sample_correct_rate
    FROM agg AS a
    LEFT JOIN submissions AS m USING (submission)
    LEFT JOIN trajectory_summary AS t ON t.track = $track AND t.submission = a.submission
),
summary AS (
    SELECT
        r.submission, m.name, m.kind, m.method, m.model, r.provenance,
        r.geomean, r.mean, r.correct, NULL::BIGINT AS pallas, NULL::BIGINT AS beats_xla,
        NULL::BIGINT AS evaluated, NULL::BIGINT AS excluded, r.n_workloads::BIGINT AS n_workloads,
        r.fast1_final, NULL::HUGEINT AS samples, NULL::DOUBLE AS sample_correct_rate
    FROM reported_summary AS r
    LEFT JOIN submissions AS m USING (submission)
    WHERE r.track = $track AND r.submission NOT IN (SELECT submission FROM agg)
)
-- The XLA baseline submission (kind 'baseline') is a sanity row: it is listed, last and without a rank,
-- since its score only shows the track's timing noise for identical programs.
SELECT
    CASE WHEN kind IS DISTINCT FROM 'baseline' THEN
        row_number() OVER (PARTITION BY kind IS NOT DISTINCT FROM 'baseline'
                           ORDER BY geomean DESC, mean DESC, correct DESC, submission)
    END AS rank,
    'speed' AS ranking,
    *
FROM (SELECT * FROM measured UNION ALL BY NAME SELECT * FROM summary)
ORDER BY rank NULLS LAST, submission;
