-- Span latency between 03:10 and 03:15 (spans in the config; the spans files): per span,
-- how many ended, p50/p90/p99 of wall and on-CPU time (the upper bound of the log2 bucket
-- the percentile falls in), and the average split of a span's wall time: slow because it
-- computes, because it waited for a CPU, or because it slept or blocked.
CREATE OR REPLACE VIEW spans AS
SELECT * FROM read_csv('data/threadcap_spans_*.csv*', header = true, columns = {
    'minute': 'TIMESTAMPTZ', 'span': 'VARCHAR', 'count': 'BIGINT', 'wall_us': 'BIGINT',
    'on_cpu_us': 'BIGINT', 'runnable_us': 'BIGINT', 'sleeping_us': 'BIGINT',
    'uninterruptible_us': 'BIGINT', 'wall_hist': 'VARCHAR', 'on_cpu_hist': 'VARCHAR'});

WITH w AS (SELECT span, count, wall_us, on_cpu_us, runnable_us, sleeping_us, uninterruptible_us,
                  string_split(wall_hist, ' ') AS wh, string_split(on_cpu_hist, ' ') AS ch
           FROM spans
           WHERE minute >= TIMESTAMPTZ '2026-11-21 03:10:00' AND minute < TIMESTAMPTZ '2026-11-21 03:15:00'),
buckets AS (
    SELECT span, 'wall' AS kind, unnest(range(len(wh))) AS bucket, CAST(unnest(wh) AS BIGINT) AS n FROM w
    UNION ALL
    SELECT span, 'on_cpu', unnest(range(len(ch))), CAST(unnest(ch) AS BIGINT) FROM w),
cumulative AS (
    SELECT span, kind, bucket,
           sum(sum(n)) OVER (PARTITION BY span, kind ORDER BY bucket) AS below,
           sum(sum(n)) OVER (PARTITION BY span, kind) AS total
    FROM buckets GROUP BY span, kind, bucket),
-- Bucket b holds [2^(b-1), 2^b) µs: its upper bound, in ms.
pct AS (
    SELECT span, kind,
           pow(2, min(bucket) FILTER (WHERE below >= 0.50 * total)) / 1000 AS p50,
           pow(2, min(bucket) FILTER (WHERE below >= 0.90 * total)) / 1000 AS p90,
           pow(2, min(bucket) FILTER (WHERE below >= 0.99 * total)) / 1000 AS p99
    FROM cumulative GROUP BY span, kind)
SELECT w.span, CAST(sum(count) AS BIGINT) AS spans, round(sum(wall_us) / sum(count) / 1000, 3) AS avg_wall_ms,
       any_value(pw.p50) AS wall_p50_ms, any_value(pw.p90) AS wall_p90_ms, any_value(pw.p99) AS wall_p99_ms,
       any_value(pc.p50) AS cpu_p50_ms, any_value(pc.p90) AS cpu_p90_ms, any_value(pc.p99) AS cpu_p99_ms,
       round(sum(on_cpu_us) / sum(wall_us), 2) AS on_cpu_share,
       round(sum(runnable_us) / sum(wall_us), 2) AS runnable_share,
       round(sum(sleeping_us) / sum(wall_us), 2) AS sleeping_share,
       round(sum(uninterruptible_us) / sum(wall_us), 2) AS uninterruptible_share
FROM w
JOIN pct pw ON pw.span = w.span AND pw.kind = 'wall'
JOIN pct pc ON pc.span = w.span AND pc.kind = 'on_cpu'
GROUP BY w.span
ORDER BY sum(wall_us) DESC;
