-- Query 0: Pass through (nexmark-flink/src/main/resources/queries/q0.sql, the DDL for Hummer)
CREATE TABLE nexmark_q0 (auction BIGINT, bidder BIGINT, price BIGINT, dateTime TIMESTAMP, extra TEXT) ENGINE=blackhole CONNECTION='blackhole://';

INSERT INTO nexmark_q0
SELECT auction, bidder, price, dateTime, extra FROM bid;
