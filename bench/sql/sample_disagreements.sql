-- Measured samples on $track whose declared values disagree with the measurement (see sample_disagreements in
-- base.sql): the outcome differs, or the declared speedup lies outside the measured 95% interval (without an
-- interval: only one of declared and measured beats XLA).
SELECT submission, workload, sample_idx, declared_in, declared_outcome, declared_speedup, outcome, status, speedup,
       speedup_ci_low, speedup_ci_high, selected, kind
FROM sample_disagreements
WHERE track = $track
ORDER BY submission, workload, sample_idx, declared_in;
