-- Every measured trajectory sample of $track, as bench build-site publishes it (site/data/<track>/samples.*): every
-- stored set (history), `current` marking the set the curves use (the newest stored_at of its workload), and its
-- outcome as the SQL derives it (measured_samples in base.sql: status, flags and maintainer verdicts); declared
-- samples (a trajectory.csv, data/declared/) are not published here.
SELECT * FROM measured_samples WHERE track = $track ORDER BY submission, workload, stored_at NULLS FIRST, sample_idx;
