-- Query 2: Selection (nexmark-flink/src/main/resources/queries/q2.sql, the DDL for Hummer)
CREATE TABLE nexmark_q2 (auction BIGINT, price BIGINT) ENGINE=blackhole CONNECTION='blackhole://';

INSERT INTO nexmark_q2
SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0;
