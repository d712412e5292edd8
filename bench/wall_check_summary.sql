-- The outside wall-clock checks of every evaluation in an OpenKernel store, summarised (times in us):
-- how far the median block stayed over (positive: rejected) or under its allowance, and (that plus
-- the mean per-block allowance) about its excess over the candidate's own timings and gaps.
-- Usage: sqlite3 -header -column STORE.db < bench/wall_check_summary.sql
WITH w AS (
  SELECT e.session, e.verdict, k.key AS checkname,
         json_extract(k.value, '$.median_block_over_us') AS over,
         json_extract(k.value, '$.allowance_us') / json_extract(k.value, '$.blocks') AS per_block
  FROM evaluations e, json_each(e.result) k
  WHERE k.key IN ('wall_check', 'rested_wall_check'))
SELECT checkname, count(*) AS n, sum(verdict = 'correct') AS correct,
       round(min(over)) AS over_min, round(max(over)) AS over_max,
       round(min(over + per_block)) AS excess_min, round(max(over + per_block)) AS excess_max,
       round(avg(per_block)) AS allowance_per_block
FROM w GROUP BY checkname;
