-- Per (submission, workload) measured trajectory on $track: samples, outcome counts, the first sample established
-- faster than XLA (faster_than_xla in base.sql, what fast1@N counts), the best correct speedup (and the best of the
-- samples that also lower for TPU), which samples the
-- submitted kernel is (by content: the selection rule), and how many declared values disagree with the measurement;
-- for an Autocomp trajectory, its beam per iteration (phase, samples, the parents they came from, the samples that
-- entered the beam), as the trajectory's steps declare it.
WITH per AS (
    SELECT
        submission, workload,
        count(*) AS samples,
        count(*) FILTER (WHERE outcome = 'correct') AS correct,
        count(*) FILTER (WHERE outcome = 'wrong_output') AS wrong_output,
        count(*) FILTER (WHERE outcome = 'api_runtime_error') AS api_runtime_error,
        count(*) FILTER (WHERE outcome = 'integrity_excluded') AS integrity_excluded,
        min(sample_idx) FILTER (WHERE faster_than_xla) + 1 AS first_win_n,
        max(speedup) FILTER (WHERE outcome = 'correct') AS best_speedup,
        -- the best correct sample that also lowers for TPU (measured, schema 4): what a readiness track's selection
        -- rule can submit, so a reader sees why the submitted kernel may be slower than the best correct one
        max(speedup) FILTER (WHERE outcome = 'correct' AND tpu_lowering = 'ok') AS best_lowering_speedup,
        list(sample_idx ORDER BY sample_idx) FILTER (WHERE selected) AS selected_samples,
        any_value(speedup) FILTER (WHERE selected) AS selected_speedup,
        any_value(outcome) FILTER (WHERE selected) AS selected_outcome
    FROM trajectory_samples
    WHERE basis = 'measured' AND track = $track
    GROUP BY submission, workload
),
steps AS (
    SELECT submission, workload, step_iteration AS iteration, any_value(step_phase) AS phase,
           min(sample_idx) AS first_sample, max(sample_idx) AS last_sample, count(*) AS n,
           list(DISTINCT coalesce(step_parent, -1) ORDER BY coalesce(step_parent, -1)) AS parents,
           coalesce(list(sample_idx ORDER BY sample_idx) FILTER (WHERE step_beam), []) AS entered
    FROM trajectory_samples
    WHERE basis = 'measured' AND track = $track AND step_iteration IS NOT NULL
    GROUP BY submission, workload, step_iteration
),
beam AS (
    SELECT submission, workload,
           list(struct_pack(iteration, phase, first_sample, last_sample, n, parents, entered) ORDER BY iteration) AS beam
    FROM steps GROUP BY submission, workload
),
dis AS (
    SELECT submission, workload, count(*) AS disagreements FROM sample_disagreements WHERE track = $track GROUP BY ALL
)
SELECT per.*, coalesce(dis.disagreements, 0) AS disagreements, beam.beam
FROM per LEFT JOIN dis USING (submission, workload) LEFT JOIN beam USING (submission, workload)
ORDER BY submission, workload;
