-- Per (submission, workload) measured trajectory on $track: samples, outcome counts, the first sample that beats
-- XLA, the best correct speedup, which samples the submitted kernel is (by content: the selection rule), and how
-- many declared values disagree with the measurement.
WITH dis AS (
    SELECT submission, workload, count(*) AS disagreements FROM sample_disagreements WHERE track = $track GROUP BY ALL
)
SELECT
    t.submission, t.workload,
    count(*) AS samples,
    count(*) FILTER (WHERE t.outcome = 'correct') AS correct,
    count(*) FILTER (WHERE t.outcome = 'wrong_output') AS wrong_output,
    count(*) FILTER (WHERE t.outcome = 'api_runtime_error') AS api_runtime_error,
    count(*) FILTER (WHERE t.outcome = 'integrity_excluded') AS integrity_excluded,
    count(DISTINCT t.source_hash) AS distinct_sources,
    min(t.sample_idx) FILTER (WHERE t.beats_xla) + 1 AS first_win_n,
    max(t.speedup) FILTER (WHERE t.outcome = 'correct') AS best_speedup,
    list(t.sample_idx ORDER BY t.sample_idx) FILTER (WHERE t.selected) AS selected_samples,
    any_value(t.speedup) FILTER (WHERE t.selected) AS selected_speedup,
    any_value(t.outcome) FILTER (WHERE t.selected) AS selected_outcome,
    coalesce(any_value(d.disagreements), 0) AS disagreements
FROM trajectory_samples AS t
LEFT JOIN dis AS d USING (submission, workload)
WHERE t.basis = 'measured' AND t.track = $track
GROUP BY t.submission, t.workload
ORDER BY t.submission, t.workload;
