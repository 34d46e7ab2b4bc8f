-- Per-sample outcome breakdown on $track, pooled over all samples of each submission.
SELECT
    submission,
    count(*) AS samples,
    count(*) FILTER (WHERE outcome = 'api_runtime_error') AS api_runtime_error,
    count(*) FILTER (WHERE outcome = 'wrong_output') AS wrong_output,
    count(*) FILTER (WHERE outcome = 'correct') AS correct,
    avg((outcome = 'api_runtime_error')::DOUBLE) AS api_runtime_error_share,
    avg((outcome = 'wrong_output')::DOUBLE) AS wrong_output_share,
    avg((outcome = 'correct')::DOUBLE) AS correct_share,
    any_value(provenance) AS provenance
FROM samples
WHERE track = $track
GROUP BY submission
ORDER BY submission;
