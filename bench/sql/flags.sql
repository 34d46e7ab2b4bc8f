-- Every integrity flag on $track's current rows: whether it excludes, and the verdict if any.
SELECT track, submission, workload, content_hash, flag, excluding, pending, verdict, verdict_by, verdict_at, verdict_why
FROM row_flags
WHERE track = $track AND current
ORDER BY submission, workload, flag;
