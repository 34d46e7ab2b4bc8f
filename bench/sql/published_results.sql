-- Every stored row of $track, as bench build-site publishes it (site/data/<track>/results.*): the whole
-- history, with `current` marking the row the ranking uses (the `latest` row of its key) and the harness's
-- reason shortened. The publisher keeps only schema.PUBLIC_COLUMNS.
SELECT
    r.* REPLACE (left(r.reason, 500) AS reason),
    EXISTS (
        SELECT 1 FROM latest AS l
        WHERE l.track = r.track AND l.submission = r.submission AND l.workload = r.workload
          AND l.evaluated_at IS NOT DISTINCT FROM r.evaluated_at
          AND l.content_hash IS NOT DISTINCT FROM r.content_hash
    ) AS current
FROM results AS r
WHERE r.track = $track
ORDER BY r.submission, r.workload, r.evaluated_at;
