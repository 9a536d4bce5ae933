-- The hosts whose threads spent the most time in D state (uninterruptible, mostly disk)
-- between 03:10 and 03:15, the threads that did, and the kernel function most of it was in:
-- one storage array behind them shows as one wchan on many hosts.
WITH w AS (SELECT TIMESTAMPTZ '2026-11-21 03:10:00' AS t0, TIMESTAMPTZ '2026-11-21 03:15:00' AS t1)
SELECT host, round(sum(uninterruptible_us) / 1e6, 1) AS d_state_s,
       count(DISTINCT tid) FILTER (WHERE state = 'uninterruptible') AS d_threads,
       mode(wchan) FILTER (WHERE state = 'uninterruptible') AS wchan
FROM fleet_samples, w
WHERE sample_time >= t0 AND sample_time < t1
  AND date BETWEEN timezone('UTC', t0)::DATE AND timezone('UTC', t1)::DATE
GROUP BY host
HAVING sum(uninterruptible_us) > 0
ORDER BY d_state_s DESC
LIMIT 20;
