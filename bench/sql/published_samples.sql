-- Every measured trajectory sample of $track, as bench build-site publishes it (site/data/<track>/samples.*), with
-- its outcome as the SQL derives it (measured_samples in base.sql: status, flags and maintainer verdicts);
-- declared samples (a trajectory.csv, data/declared/) are not published here.
SELECT * FROM measured_samples WHERE track = $track ORDER BY submission, workload, sample_idx;
