-- Best-so-far geomean on $track from the samples of one $basis (the paper's Figure 3, left): for each submission
-- with a trajectory and N = 1 .. its largest budget, the geometric mean over the track's suite of each benchmark's
-- best floored score among its first N samples (correct samples only, floored at 1x; a benchmark without a
-- correct sample, or without a trajectory, counts as 1x). A workload with fewer than N samples keeps its final best.
-- Only samples that beat XLA can raise a best above the 1x floor, so the running maximum runs over those alone:
-- per workload, each record-breaking sample adds ln(new best) - ln(old best) to the suite's sum at its N.
WITH running AS (
    SELECT submission, sample_idx, score,
           max(score) OVER (PARTITION BY submission, workload ORDER BY sample_idx
                            ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before
    FROM trajectory_samples
    WHERE track = $track AND basis = $basis AND beats_xla
),
steps AS (
    SELECT submission, sample_idx + 1 AS n, sum(ln(score) - ln(coalesce(before, 1.0))) AS step
    FROM running
    WHERE score > coalesce(before, 1.0)
    GROUP BY ALL
)
SELECT
    g.submission, g.n,
    exp(sum(coalesce(s.step, 0.0)) OVER (PARTITION BY g.submission ORDER BY g.n)
        / (SELECT count(*) FROM suite WHERE track = $track)) AS geomean,
    $basis AS basis
FROM (SELECT submission, n FROM trajectory_grid WHERE track = $track AND basis = $basis) AS g
LEFT JOIN steps AS s USING (submission, n)
ORDER BY g.submission, g.n;
