-- The CPU profile between 03:10 and 03:15 (threadcap_profile_ files, written when
-- profile.hz is set): the functions threads ran in most, by the innermost user frame of
-- each sample (the innermost kernel frame when it has no user stack: kernel threads), and
-- the CPU seconds their samples stand for (a sample is 1/hz s of CPU).
CREATE OR REPLACE VIEW profile AS
SELECT * FROM read_csv('data/threadcap_profile_*.csv*', header = true, columns = {
    'minute': 'TIMESTAMPTZ', 'pid': 'INTEGER', 'tid': 'INTEGER', 'process': 'VARCHAR',
    'thread': 'VARCHAR', 'kernel_stack': 'VARCHAR', 'user_stack': 'VARCHAR',
    'samples': 'BIGINT', 'hz': 'INTEGER', 'span': 'VARCHAR'});

WITH stacks AS (
    SELECT DISTINCT hash, frames
    FROM read_csv('data/threadcap_stacks_*.csv*', header = true, columns = {'hash': 'VARCHAR', 'frames': 'VARCHAR'}))
SELECT p.process, coalesce(string_split(coalesce(u.frames, k.frames), ';')[-1], '[unknown]') AS function,
       CAST(sum(p.samples) AS BIGINT) AS samples, round(sum(p.samples / p.hz), 2) AS cpu_s
FROM profile p
LEFT JOIN stacks u ON u.hash = p.user_stack
LEFT JOIN stacks k ON k.hash = p.kernel_stack
WHERE p.minute >= TIMESTAMPTZ '2026-11-21 03:10:00' AND p.minute < TIMESTAMPTZ '2026-11-21 03:15:00'
GROUP BY ALL
ORDER BY samples DESC, function
LIMIT 20;
