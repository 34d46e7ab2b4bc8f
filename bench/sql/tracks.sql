-- The tracks present in the dataset, with their provenance, ranking kind, suite size and number of submissions.
WITH t AS (
    SELECT track, min(chip) AS chip, min(size) AS size, min(provenance) AS provenance,
           count(DISTINCT submission) AS submissions
    FROM latest GROUP BY track
    UNION ALL BY NAME
    SELECT track, 'v6e' AS chip, 'full' AS size, min(provenance) AS provenance,
           count(DISTINCT submission) AS submissions
    FROM reported_summary WHERE track NOT IN (SELECT track FROM latest) GROUP BY track
)
SELECT t.*, coalesce((SELECT any_value(k.ranking) FROM track_ranking AS k WHERE k.track = t.track), 'speed') AS ranking,
       coalesce((SELECT count(*) FROM suite AS s WHERE s.track = t.track), 0) AS n_workloads,
       coalesce((SELECT any_value(n_workloads) FROM reported_summary AS r WHERE r.track = t.track), NULL) AS reported_n_workloads
FROM t
ORDER BY (provenance = 'measured') DESC, track;
