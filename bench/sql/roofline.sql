-- Roofline points on $track: operational intensity and achieved TFLOP/s of the XLA baseline and of
-- each ranked kernel (chip peaks live in bench/harness/hardware.py; the caller draws the roof).
SELECT
    j.workload, j.submission, j.operational_intensity, j.flops, j.bytes_accessed,
    j.flops / (j.baseline_ms * 1e9) AS baseline_tflops,
    j.flops / (j.kernel_ms * 1e9) AS kernel_tflops,
    j.baseline_ms, j.kernel_ms, j.speedup
FROM judged AS j
WHERE j.track = $track AND j.ranked AND j.flops IS NOT NULL AND j.kernel_ms > 0
ORDER BY j.workload, j.submission;
