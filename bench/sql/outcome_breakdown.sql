-- Per-sample outcome breakdown on $track, pooled over all samples of each submission, from one $basis
-- ('measured' or 'declared'). Measured samples with an excluding integrity flag are their own class. Each share
-- carries its 95% Wilson interval <share>_ci = [low, high] (wilson_ci in base.sql).
SELECT
    submission,
    sum(n) AS samples,
    coalesce(sum(n) FILTER (WHERE outcome = 'api_runtime_error'), 0) AS api_runtime_error,
    coalesce(sum(n) FILTER (WHERE outcome = 'wrong_output'), 0) AS wrong_output,
    coalesce(sum(n) FILTER (WHERE outcome = 'correct'), 0) AS correct,
    coalesce(sum(n) FILTER (WHERE outcome = 'integrity_excluded'), 0) AS integrity_excluded,
    coalesce(sum(n) FILTER (WHERE outcome = 'api_runtime_error'), 0) / sum(n) AS api_runtime_error_share,
    coalesce(sum(n) FILTER (WHERE outcome = 'wrong_output'), 0) / sum(n) AS wrong_output_share,
    coalesce(sum(n) FILTER (WHERE outcome = 'correct'), 0) / sum(n) AS correct_share,
    coalesce(sum(n) FILTER (WHERE outcome = 'integrity_excluded'), 0) / sum(n) AS integrity_excluded_share,
    wilson_ci(coalesce(sum(n) FILTER (WHERE outcome = 'api_runtime_error'), 0), sum(n)) AS api_runtime_error_share_ci,
    wilson_ci(coalesce(sum(n) FILTER (WHERE outcome = 'wrong_output'), 0), sum(n)) AS wrong_output_share_ci,
    wilson_ci(coalesce(sum(n) FILTER (WHERE outcome = 'correct'), 0), sum(n)) AS correct_share_ci,
    wilson_ci(coalesce(sum(n) FILTER (WHERE outcome = 'integrity_excluded'), 0), sum(n)) AS integrity_excluded_share_ci,
    any_value(provenance) AS provenance,
    $basis AS basis
FROM sample_outcomes
WHERE track = $track AND basis = $basis
GROUP BY submission
ORDER BY submission;
