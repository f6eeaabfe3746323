-- Query 1: Currency conversion (nexmark-flink/src/main/resources/queries/q1.sql, the DDL for Hummer)
CREATE TABLE nexmark_q1 (auction BIGINT, bidder BIGINT, price DECIMAL(23, 3), dateTime TIMESTAMP, extra TEXT) ENGINE=blackhole CONNECTION='blackhole://';

INSERT INTO nexmark_q1
SELECT
    auction,
    bidder,
    0.908 * price as price, -- convert dollar to euro
    dateTime,
    extra
FROM bid;
