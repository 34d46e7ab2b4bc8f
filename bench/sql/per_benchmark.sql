-- Every submission x every workload of $track's suite: the best ranked speedup (NULL if none)
-- and the floored score that enters the aggregates.
SELECT submission, workload, status, raw_speedup, best_speedup, score, ranked, has_pallas, pending_flags
FROM per_benchmark_all
WHERE track = $track
ORDER BY submission, workload;
