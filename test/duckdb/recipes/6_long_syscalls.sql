-- Threads that spent longer than 1 s in one syscall between 03:10 and 03:15, longest first.
SELECT pid, tid, process, thread, syscall, round(max(syscall_us) / 1e6, 3) AS longest_s,
       max(sample_time) AS last_seen
FROM samples
WHERE syscall_us > 1000000
  AND sample_time >= TIMESTAMPTZ '2026-11-21 03:10:00' AND sample_time < TIMESTAMPTZ '2026-11-21 03:15:00'
GROUP BY ALL
ORDER BY longest_s DESC
LIMIT 20;
