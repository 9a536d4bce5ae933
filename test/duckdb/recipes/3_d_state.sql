-- Threads stuck in D state (uninterruptible) between 03:10 and 03:15, in which syscall and
-- kernel function, for how many ticks, and the longest time in D state seen.
SELECT pid, tid, process, thread, syscall, mode(wchan) AS wchan, count(*) AS ticks,
       round(max(state_us) / 1e6, 3) AS longest_s, min(sample_time) AS first_seen, max(sample_time) AS last_seen
FROM samples
WHERE state = 'uninterruptible'
  AND sample_time >= TIMESTAMPTZ '2026-11-21 03:10:00' AND sample_time < TIMESTAMPTZ '2026-11-21 03:15:00'
GROUP BY pid, tid, process, thread, syscall
ORDER BY ticks DESC
LIMIT 20;
