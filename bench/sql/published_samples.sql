-- Every measured trajectory sample of $track, as bench build-site publishes it (site/data/<track>/samples.*);
-- declared samples (a trajectory.csv, data/declared/) are not published here.
SELECT * FROM samples WHERE track = $track ORDER BY submission, workload, sample_idx;
