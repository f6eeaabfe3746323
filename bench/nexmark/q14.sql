-- Query 14: Calculation (nexmark-flink/src/main/resources/queries/q14.sql, the DDL for Hummer:
-- count_char is a built-in function, so the suite's CREATE FUNCTION is not needed)
CREATE TABLE nexmark_q14 (auction BIGINT, bidder BIGINT, price DECIMAL(23, 3), bidTimeType TEXT, dateTime TIMESTAMP, extra TEXT, c_counts BIGINT) ENGINE=blackhole CONNECTION='blackhole://';

INSERT INTO nexmark_q14
SELECT 
    auction,
    bidder,
    0.908 * price as price,
    CASE
        WHEN HOUR(dateTime) >= 8 AND HOUR(dateTime) <= 18 THEN 'dayTime'
        WHEN HOUR(dateTime) <= 6 OR HOUR(dateTime) >= 20 THEN 'nightTime'
        ELSE 'otherTime'
    END AS bidTimeType,
    dateTime,
    extra,
    count_char(extra, 'c') AS c_counts
FROM bid
WHERE 0.908 * price > 1000000 AND 0.908 * price < 50000000;
