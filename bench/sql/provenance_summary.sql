-- Where the current rows of each submission on $track came from: versions, sandbox, timing method, dates
-- (the provenance summary of site/api/leaderboard.json).
SELECT
    submission,
    count(*) AS rows,
    list(DISTINCT provenance ORDER BY provenance) AS provenance,
    list(DISTINCT harness_version ORDER BY harness_version) FILTER (WHERE harness_version IS NOT NULL) AS harness_versions,
    list(DISTINCT jax_version ORDER BY jax_version) FILTER (WHERE jax_version IS NOT NULL) AS jax_versions,
    list(DISTINCT device_kind ORDER BY device_kind) FILTER (WHERE device_kind IS NOT NULL) AS device_kinds,
    list(DISTINCT host_cpu ORDER BY host_cpu) FILTER (WHERE host_cpu IS NOT NULL) AS host_cpus,
    list(DISTINCT sandbox ORDER BY sandbox) FILTER (WHERE sandbox IS NOT NULL) AS sandboxes,
    list(DISTINCT timing_method ORDER BY timing_method) FILTER (WHERE timing_method IS NOT NULL) AS timing_methods,
    bool_or(coalesce(interpret, false)) AS any_interpret,
    min(evaluated_at) AS first_evaluated_at,
    max(evaluated_at) AS last_evaluated_at
FROM latest
WHERE track = $track
GROUP BY submission
ORDER BY submission;
