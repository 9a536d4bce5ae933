-- Average active threads by host and state between 03:10 and 03:15 (local time): active
-- sessions divided by that host's ticks in the window (the ASH measure). A thread asleep
-- outside a span, and an exited thread's last row (dead), is no active session.
WITH w AS (SELECT TIMESTAMPTZ '2026-11-21 03:10:00' AS t0, TIMESTAMPTZ '2026-11-21 03:15:00' AS t1),
ticks AS (
    SELECT host, count(*) AS ticks FROM fleet_ticks, w
    WHERE sample_time >= t0 AND sample_time < t1
      AND date BETWEEN timezone('UTC', t0)::DATE AND timezone('UTC', t1)::DATE
    GROUP BY host)
SELECT s.host, s.state, round(count(*) / any_value(ticks.ticks), 2) AS avg_threads
FROM fleet_samples s JOIN ticks USING (host), w
WHERE s.sample_time >= t0 AND s.sample_time < t1 AND s.active
  AND s.date BETWEEN timezone('UTC', t0)::DATE AND timezone('UTC', t1)::DATE
GROUP BY s.host, s.state
ORDER BY s.host, avg_threads DESC;
