-- fast_p on $track (KernelBench's metric): per submission and p in (0, 1, 1.5, 2), the share of the track's suite
-- whose submitted (current) kernel is correct, not excluded, and established faster than p x XLA: its speedup
-- interval's lower bound is above p after a Holm correction over the submission's workloads (speed_tests in
-- base.sql; a row without an interval counts by its point estimate). fast_0 is the share of correct kernels.
-- n_indistinguishable counts the correct kernels whose interval does not separate them from p x XLA.
-- fast_p_ci: the share's 95% Wilson interval [low, high] (wilson_ci in base.sql).
-- On a readiness (CPU) track the speedups are interpret-mode times.
WITH counted AS (
    SELECT
        pb.submission, p.p,
        count(*) FILTER (WHERE pb.ranked AND (p.p = 0 OR st.verdict = 'faster')) AS n_fast,
        count(*) FILTER (WHERE pb.ranked AND p.p > 0 AND st.verdict = 'indistinguishable') AS n_indistinguishable,
        count(*) AS n_workloads,
        any_value(k.ranking) AS ranking
    FROM per_benchmark_all AS pb
    CROSS JOIN (VALUES (0.0::DOUBLE), (1.0), (1.5), (2.0)) AS p(p)
    LEFT JOIN speed_tests AS st
        ON st.track = pb.track AND st.submission = pb.submission AND st.workload = pb.workload AND st.p = p.p
    LEFT JOIN track_ranking AS k ON k.track = pb.track
    WHERE pb.track = $track
    GROUP BY pb.submission, p.p
)
SELECT submission, p, n_fast, n_indistinguishable, n_workloads, n_fast / n_workloads::DOUBLE AS fast_p,
       wilson_ci(n_fast, n_workloads) AS fast_p_ci, ranking
FROM counted
ORDER BY submission, p;
