-- CPU starvation between 03:10 and 03:15: seconds runnable but waiting for a CPU, by
-- process, and the share of the time it wanted a CPU that it spent waiting.
SELECT process, round(sum(runnable_us) / 1e6, 3) AS runnable_s, round(sum(on_cpu_us) / 1e6, 3) AS cpu_s,
       round(sum(runnable_us) / nullif(sum(runnable_us + on_cpu_us), 0), 2) AS waiting_share
FROM samples
WHERE sample_time >= TIMESTAMPTZ '2026-11-21 03:10:00' AND sample_time < TIMESTAMPTZ '2026-11-21 03:15:00'
GROUP BY ALL
ORDER BY runnable_s DESC
LIMIT 20;
