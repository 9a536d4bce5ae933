-- Every host's Parquet hours as one view: the tree threadcap writes (output.format parquet
-- or both), or the same tree in a bucket ('s3://BUCKET/PREFIX/parquet/kind=samples/...'
-- after LOAD httpfs and a CREATE SECRET). host is a column of every file; kind, date and
-- hour (UTC) are the tree's partitions, which a filter on date prunes before any file is read.
-- active is the samples view's: whether the row is an active session.
CREATE OR REPLACE VIEW fleet_samples AS
SELECT *, (state IN ('on_cpu', 'runnable', 'uninterruptible') OR (state <> 'dead' AND coalesce(span, '') <> '')) AS active
FROM read_parquet('parquet/kind=samples/*/*/*.parquet', hive_partitioning = true,
    hive_types = {'kind': VARCHAR, 'date': DATE, 'hour': INTEGER});

-- Every host's ticks: what averages per tick divide by, host by host.
CREATE OR REPLACE VIEW fleet_ticks AS
SELECT * FROM read_parquet('parquet/kind=ticks/*/*/*.parquet', hive_partitioning = true,
    hive_types = {'kind': VARCHAR, 'date': DATE, 'hour': INTEGER});
