-- Per-sample outcome breakdown on $track, pooled over all samples of each submission.
SELECT
    submission,
    sum(n) AS samples,
    coalesce(sum(n) FILTER (WHERE outcome = 'api_runtime_error'), 0) AS api_runtime_error,
    coalesce(sum(n) FILTER (WHERE outcome = 'wrong_output'), 0) AS wrong_output,
    coalesce(sum(n) FILTER (WHERE outcome = 'correct'), 0) AS correct,
    coalesce(sum(n) FILTER (WHERE outcome = 'api_runtime_error'), 0) / sum(n) AS api_runtime_error_share,
    coalesce(sum(n) FILTER (WHERE outcome = 'wrong_output'), 0) / sum(n) AS wrong_output_share,
    coalesce(sum(n) FILTER (WHERE outcome = 'correct'), 0) / sum(n) AS correct_share,
    any_value(provenance) AS provenance
FROM sample_outcomes
WHERE track = $track
GROUP BY submission
ORDER BY submission;
