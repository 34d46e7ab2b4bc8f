-- The paper's Table 3 layout, long form: per workload of $track's suite, the XLA and hand-tuned
-- times and each submission's speedup over XLA (NULL = no correct kernel, "—" in the paper).
SELECT
    pb.workload, r.xla_ms, r.hand_tuned_ms,
    r.xla_ms / r.hand_tuned_ms AS hand_tuned_speedup,
    pb.submission, m.kind, pb.best_speedup AS speedup, pb.score
FROM per_benchmark_all AS pb
JOIN workload_refs AS r ON r.track = pb.track AND r.workload = pb.workload
LEFT JOIN submissions AS m USING (submission)
WHERE pb.track = $track
ORDER BY pb.workload, pb.submission;
