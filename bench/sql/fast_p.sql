-- fast_p on $track (KernelBench's metric): per submission and p in (0, 1, 1.5, 2), the share of the track's suite
-- whose submitted (current) kernel is correct, not excluded, and faster than p x XLA (its row's speedup > p).
-- fast_0 is the share of correct kernels. On a readiness (CPU) track the speedups are interpret-mode times.
SELECT
    pb.submission, p.p,
    count(*) FILTER (WHERE pb.ranked AND pb.raw_speedup > p.p) AS n_fast,
    count(*) AS n_workloads,
    count(*) FILTER (WHERE pb.ranked AND pb.raw_speedup > p.p) / count(*)::DOUBLE AS fast_p,
    k.ranking
FROM per_benchmark_all AS pb
CROSS JOIN (VALUES (0.0::DOUBLE), (1.0), (1.5), (2.0)) AS p(p)
LEFT JOIN track_ranking AS k ON k.track = pb.track
WHERE pb.track = $track
GROUP BY pb.submission, p.p, k.ranking
ORDER BY pb.submission, p.p;
