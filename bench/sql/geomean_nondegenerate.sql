-- The leaderboard's geomean without degenerate workloads, per submission of $track: the same floored per-benchmark
-- scores as leaderboard.sql (per_benchmark_all), averaged over the suite less the workloads whose correctness gate
-- cannot tell the task's computation from a shortcut on upstream's inputs (degenerate_workloads: the DEGENERATE
-- note of the workload's module, from the trivial-solution certificate, bench/audit/certificate.py). A shortcut
-- kernel scores on a degenerate workload as if it did the work; this figure leaves such workloads out.
-- degenerate lists the workloads left out (the same for every submission of the track).
SELECT
    p.submission,
    exp(avg(ln(p.score)) FILTER (WHERE d.workload IS NULL)) AS geomean_nondegenerate,
    count(*) FILTER (WHERE d.workload IS NULL) AS n_workloads_nondegenerate,
    coalesce(list(p.workload ORDER BY p.workload) FILTER (WHERE d.workload IS NOT NULL), []) AS degenerate
FROM per_benchmark_all AS p
LEFT JOIN degenerate_workloads AS d USING (workload)
WHERE p.track = $track
GROUP BY p.submission
ORDER BY geomean_nondegenerate DESC NULLS LAST, p.submission;
