-- Block I/O per minute, disk and operation (threadcap_io_ files, written when io is on).
CREATE OR REPLACE VIEW io AS
SELECT * FROM read_csv('data/threadcap_io_*.csv*', header = true, columns = {
    'minute': 'TIMESTAMPTZ', 'disk': 'VARCHAR', 'op': 'VARCHAR', 'requests': 'BIGINT',
    'bytes': 'BIGINT', 'queue_us': 'BIGINT', 'device_us': 'BIGINT', 'queue_hist': 'VARCHAR',
    'device_hist': 'VARCHAR'});

-- The slowest disk minute by minute between 03:10 and 03:15: in each minute, the disk whose
-- requests spent longest at the device on average, with its time queued before and its
-- throughput.
SELECT minute, disk, sum(requests) AS requests,
       round(sum(device_us) / sum(requests) / 1e3, 3) AS device_ms,
       round(sum(queue_us) / sum(requests) / 1e3, 3) AS queue_ms,
       round(sum(bytes) / 60 / 1e6, 3) AS mb_per_s
FROM io
WHERE minute >= TIMESTAMPTZ '2026-11-21 03:10:00' AND minute < TIMESTAMPTZ '2026-11-21 03:15:00'
GROUP BY minute, disk
QUALIFY row_number() OVER (PARTITION BY minute ORDER BY device_ms DESC) = 1
ORDER BY minute;
