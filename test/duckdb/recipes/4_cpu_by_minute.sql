-- CPU seconds by process per minute. Exact, not sampled: on_cpu_us is all the time a thread
-- ran since the previous tick; the dead row of a thread that exited holds its last stretch.
SELECT date_trunc('minute', sample_time) AS minute, process, round(sum(on_cpu_us) / 1e6, 3) AS cpu_s
FROM samples
GROUP BY ALL
ORDER BY minute, cpu_s DESC;
