-- Top waits between 03:10 and 03:15 (local time): what active sessions off CPU waited
-- for, in average threads per tick (the ASH measure), by state, span and syscall. A thread
-- asleep outside a span, or a dead row (a thread's last, after it exited), is no active
-- session: it waits for nothing anyone asked of it.
WITH w AS (SELECT TIMESTAMPTZ '2026-11-21 03:10:00' AS t0, TIMESTAMPTZ '2026-11-21 03:15:00' AS t1)
SELECT state, span, syscall,
       round(count(*) / (SELECT count(*) FROM ticks, w WHERE sample_time >= t0 AND sample_time < t1), 2) AS avg_threads
FROM samples, w
WHERE sample_time >= t0 AND sample_time < t1 AND active AND state <> 'on_cpu'
GROUP BY state, span, syscall
ORDER BY avg_threads DESC
LIMIT 20;
