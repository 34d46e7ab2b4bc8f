-- Measured samples on $track whose declared values disagree with the measurement (see sample_disagreements in
-- base.sql): outcome differs, or only one of declared and measured beats XLA.
SELECT submission, workload, sample_idx, declared_in, declared_outcome, declared_speedup, outcome, status, speedup,
       selected, kind
FROM sample_disagreements
WHERE track = $track
ORDER BY submission, workload, sample_idx, declared_in;
