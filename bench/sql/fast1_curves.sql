-- fast1@N on $track, from the samples of one $basis ('measured': evaluated by our harness; 'declared': what a
-- submitter wrote, shown apart): for each submission with a trajectory and N = 1 .. its largest budget, the
-- fraction of the suite's benchmarks with a sample established faster than XLA (faster_than_xla in base.sql:
-- correct, and its interval's lower bound above 1 at the Bonferroni level over the suite) within the first N
-- samples, with its 95% Wilson interval fast1_ci = [low, high]. Benchmarks without a trajectory never count as won.
WITH wins AS (
    SELECT submission, first_win_idx + 1 AS n, count(*) AS new_wins
    FROM trajectory_firsts
    WHERE track = $track AND basis = $basis AND first_win_idx IS NOT NULL
    GROUP BY ALL
)
, curve AS (
    SELECT
        g.submission, g.n,
        sum(coalesce(w.new_wins, 0)) OVER (PARTITION BY g.submission ORDER BY g.n) AS won,
        (SELECT count(*) FROM suite WHERE track = $track) AS n_workloads
    FROM (SELECT submission, n FROM trajectory_grid WHERE track = $track AND basis = $basis) AS g
    LEFT JOIN wins AS w USING (submission, n)
)
SELECT submission, n, won / n_workloads::DOUBLE AS fast1, wilson_ci(won, n_workloads) AS fast1_ci, $basis AS basis
FROM curve
ORDER BY submission, n;
