-- Top waits between 03:10 and 03:15 (local time): what threads off CPU waited for, in
-- average threads per tick (the ASH measure), by state and syscall.
WITH w AS (
    SELECT * FROM samples
    WHERE sample_time >= TIMESTAMPTZ '2026-11-21 03:10:00' AND sample_time < TIMESTAMPTZ '2026-11-21 03:15:00'
)
SELECT state, syscall, round(count(*) / (SELECT count(DISTINCT sample_time) FROM w), 2) AS avg_threads
FROM w
WHERE state <> 'on_cpu'
GROUP BY ALL
ORDER BY avg_threads DESC
LIMIT 20;
