-- Submission metadata as the dataset snapshotted it at ingest (the `submissions` view, latest per id).
SELECT * FROM submissions ORDER BY submission;
