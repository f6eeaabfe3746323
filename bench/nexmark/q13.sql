-- Query 13: Bounded Side Input Join (nexmark-flink/src/main/resources/queries/q13.sql, the DDL for Hummer):
-- a processing-time lookup join that enriches every bid from a file.
CREATE TABLE nexmark_q13 (auction BIGINT, bidder BIGINT, price BIGINT, dateTime TIMESTAMP, `value` TEXT) ENGINE=blackhole CONNECTION='blackhole://';

INSERT INTO nexmark_q13
SELECT
    B.auction,
    B.bidder,
    B.price,
    B.dateTime,
    S.`value`
FROM (SELECT *, PROCTIME() as p_time FROM bid) B
JOIN side_input FOR SYSTEM_TIME AS OF B.p_time AS S
ON mod(B.auction, 10000) = S.key;
