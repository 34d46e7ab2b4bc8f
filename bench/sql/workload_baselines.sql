-- The XLA baseline of every workload of $track's suite (workload_baselines in base.sql: the median baseline time
-- of the current correct, unexcluded rows; NULL where there is none), its FLOPs and utilization inputs, and the
-- hand-tuned Pallas reference (workload_refs). What the workload pages, the Workloads index and
-- api/workloads/<id>.json show as "XLA baseline".
SELECT
    s.workload, b.baseline_median_ms, coalesce(b.baseline_rows, 0) AS baseline_rows, b.flops, b.bytes_accessed,
    b.operational_intensity, b.flops / (b.baseline_median_ms * 1e9) AS baseline_tflops,
    r.hand_tuned_ms, r.hand_tuned_speedup
FROM suite AS s
LEFT JOIN workload_baselines AS b USING (track, workload)
LEFT JOIN workload_refs AS r USING (track, workload)
WHERE s.track = $track
ORDER BY s.workload;
