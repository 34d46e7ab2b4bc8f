-- fast1@N on $track, from the samples of one $basis ('measured': evaluated by our harness; 'declared': what a
-- submitter wrote, shown apart): for each submission with a trajectory and N = 1 .. its largest budget, the
-- fraction of the suite's benchmarks whose best-so-far sample beats XLA (correct and speedup > 1) within the
-- first N samples. Benchmarks without a trajectory never count as won.
WITH wins AS (
    SELECT submission, first_win_idx + 1 AS n, count(*) AS new_wins
    FROM trajectory_firsts
    WHERE track = $track AND basis = $basis AND first_win_idx IS NOT NULL
    GROUP BY ALL
)
SELECT
    g.submission, g.n,
    sum(coalesce(w.new_wins, 0)) OVER (PARTITION BY g.submission ORDER BY g.n)
        / (SELECT count(*) FROM suite WHERE track = $track)::DOUBLE AS fast1,
    $basis AS basis
FROM (SELECT submission, n FROM trajectory_grid WHERE track = $track AND basis = $basis) AS g
LEFT JOIN wins AS w USING (submission, n)
ORDER BY g.submission, g.n;
