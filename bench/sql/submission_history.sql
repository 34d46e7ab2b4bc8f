-- Every submission's score on $track under each harness version it was measured with: per (submission,
-- harness_version), the newest evaluation of each workload under that version (version_latest in base.sql),
-- scored by the same rules as the leaderboard: the floored geomean over the whole suite (workloads without a
-- row under that version count 1x), correct kernels, kernels that lower for TPU. `current_rows` counts the
-- workloads whose ranked (current) row is of this version.
WITH n AS (SELECT count(*) AS n_workloads FROM suite WHERE track = $track)
SELECT
    j.submission, j.harness_version,
    count(*) AS evaluated,
    count(*) FILTER (WHERE j.current) AS current_rows,
    count(*) FILTER (WHERE j.correct_unflagged) AS correct,
    count(*) FILTER (WHERE j.correct_unflagged AND j.tpu_lowering = 'ok') AS tpu_lowering_ok,
    exp(sum(ln(greatest(coalesce(CASE WHEN j.ranked THEN j.speedup END, 1.0), 1.0))) / any_value(n.n_workloads))
        AS geomean,
    any_value(n.n_workloads) AS n_workloads,
    min(j.evaluated_at) AS first_evaluated_at,
    max(j.evaluated_at) AS last_evaluated_at
FROM judged_all AS j, n
WHERE j.track = $track AND j.version_latest
GROUP BY j.submission, j.harness_version
ORDER BY j.submission, min(j.evaluated_at), j.harness_version;
