-- The aggregates the paper reports without per-kernel numbers (Table 2), as published (site/data/reported-summary.*).
SELECT * FROM reported_summary ORDER BY track, submission;
