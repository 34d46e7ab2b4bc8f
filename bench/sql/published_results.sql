-- Every stored row of $track, as bench build-site publishes it (site/data/<track>/results.*): the whole history
-- (every evaluation ever stored, each with its harness_version), `current` marking the row the ranking uses (the
-- newest evaluation of its track, submission and workload: `evaluations` in base.sql), and the harness's reason
-- shortened. The publisher keeps only schema.PUBLIC_COLUMNS.
SELECT r.* EXCLUDE (version_latest, eval_id) REPLACE (left(r.reason, 500) AS reason)
FROM evaluations AS r
WHERE r.track = $track
ORDER BY r.submission, r.workload, r.evaluated_at;
