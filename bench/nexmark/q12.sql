-- Query 12: Processing Time Windows (nexmark-flink/src/main/resources/queries/q12.sql, the DDL for Hummer:
-- the suite's CREATE VIEW B is a WITH clause here, because a view in Hummer is materialised,
-- a job of its own whose rows another query reads as a table, without their processing time)
CREATE TABLE nexmark_q12 (bidder BIGINT, bid_count BIGINT, starttime TIMESTAMP, endtime TIMESTAMP) ENGINE=blackhole CONNECTION='blackhole://';

INSERT INTO nexmark_q12
WITH B AS (SELECT *, PROCTIME() as p_time FROM bid)
SELECT
    bidder,
    count(*) as bid_count,
    window_start AS starttime,
    window_end AS endtime
FROM TABLE(
        TUMBLE(TABLE B, DESCRIPTOR(p_time), INTERVAL '10' SECOND))
GROUP BY bidder, window_start, window_end;
