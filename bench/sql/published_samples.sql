-- Every trajectory sample of $track, as bench build-site publishes it (site/data/<track>/samples.*).
SELECT * FROM samples WHERE track = $track ORDER BY submission, workload, sample_idx;
