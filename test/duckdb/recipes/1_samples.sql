-- Every hour file, plain and compressed, as one view with the documented column types
-- (no type guessing). Paste it once per DuckDB session; the path is where threadcap writes
-- (/var/lib/threadcap for the service). active says whether the row is an active session
-- (README, "Time travel"): on CPU, runnable or uninterruptible at the tick, or inside a
-- span whatever its state. Average active threads count these rows only.
CREATE OR REPLACE VIEW samples AS
SELECT *, (state IN ('on_cpu', 'runnable', 'uninterruptible') OR (state <> 'dead' AND coalesce(span, '') <> '')) AS active
FROM read_csv('data/threadcap_samples_*.csv*', header = true, columns = {
    'sample_time': 'TIMESTAMPTZ', 'pid': 'INTEGER', 'tid': 'INTEGER', 'process': 'VARCHAR',
    'thread': 'VARCHAR', 'user': 'VARCHAR', 'state': 'VARCHAR', 'state_us': 'BIGINT',
    'syscall': 'VARCHAR', 'syscall_us': 'BIGINT', 'syscall_cpu_us': 'BIGINT',
    'syscall_args': 'VARCHAR', 'cpu': 'INTEGER', 'on_cpu_us': 'BIGINT',
    'runnable_us': 'BIGINT', 'sleeping_us': 'BIGINT', 'uninterruptible_us': 'BIGINT',
    'stopped_us': 'BIGINT', 'voluntary_switches': 'BIGINT',
    'involuntary_switches': 'BIGINT', 'exe': 'VARCHAR', 'seeded': 'BOOLEAN',
    'wchan': 'VARCHAR', 'cgroup': 'VARCHAR', 'fd_target': 'VARCHAR',
    'kernel_stack': 'VARCHAR', 'user_stack': 'VARCHAR', 'io_dev': 'VARCHAR',
    'io_op': 'VARCHAR', 'io_bytes': 'BIGINT', 'io_us': 'BIGINT', 'io_queue_us': 'BIGINT',
    'span': 'VARCHAR', 'span_us': 'BIGINT', 'span_arg': 'VARCHAR', 'cmdline': 'VARCHAR',
    'container': 'VARCHAR', 'pod_uid': 'VARCHAR', 'unit': 'VARCHAR', 'tcp_state': 'VARCHAR',
    'tcp_srtt_us': 'BIGINT', 'tcp_retrans': 'BIGINT', 'tcp_lost': 'BIGINT',
    'tcp_cwnd': 'BIGINT', 'tcp_unacked': 'BIGINT', 'tcp_rcv_queue': 'BIGINT',
    'tcp_snd_queue': 'BIGINT', 'sleep_split_estimated': 'BOOLEAN'});

-- The time of every tick threadcap took, whether any thread had a row at it or not: what
-- averages per tick divide by.
CREATE OR REPLACE VIEW ticks AS
SELECT * FROM read_csv('data/threadcap_ticks_*.csv*', header = true, columns = {'sample_time': 'TIMESTAMPTZ'});
