-- Every submission x every workload of $track's suite: the best ranked speedup (NULL if none)
-- and the floored score that enters the aggregates; correct_unflagged and tpu_lowering for readiness tracks.
SELECT submission, workload, status, raw_speedup, best_speedup, score, ranked, correct_unflagged, tpu_lowering,
       has_pallas, pending_flags
FROM per_benchmark_all
WHERE track = $track
ORDER BY submission, workload;
