-- Roofline points on $track, one per workload: the XLA baseline's operational intensity and achieved TFLOP/s at
-- its median time (workload_baselines: the one baseline of a workload). Chip peaks live in
-- bench/hardware.py; the caller draws the roof.
SELECT
    b.workload, b.operational_intensity, b.flops, b.bytes_accessed, b.baseline_median_ms,
    b.flops / (b.baseline_median_ms * 1e9) AS baseline_tflops
FROM workload_baselines AS b
WHERE b.track = $track AND b.flops IS NOT NULL AND b.baseline_median_ms > 0
ORDER BY b.workload;
