-- Top waits between 03:10 and 03:15 (local time): what threads off CPU waited for, in
-- average threads per tick (the ASH measure), by state and syscall. A dead row is a thread's
-- last, after it exited: not a thread that waits.
WITH w AS (SELECT TIMESTAMPTZ '2026-11-21 03:10:00' AS t0, TIMESTAMPTZ '2026-11-21 03:15:00' AS t1)
SELECT state, syscall,
       round(count(*) / (SELECT count(*) FROM ticks, w WHERE sample_time >= t0 AND sample_time < t1), 2) AS avg_threads
FROM samples, w
WHERE sample_time >= t0 AND sample_time < t1 AND state NOT IN ('on_cpu', 'dead')
GROUP BY state, syscall
ORDER BY avg_threads DESC
LIMIT 20;
