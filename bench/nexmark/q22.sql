-- Query 22: Get URL Directories (nexmark-flink/src/main/resources/queries/q22.sql, the DDL for Hummer)
CREATE TABLE nexmark_q22 (auction BIGINT, bidder BIGINT, price BIGINT, channel TEXT, dir1 TEXT, dir2 TEXT, dir3 TEXT) ENGINE=blackhole CONNECTION='blackhole://';

INSERT INTO nexmark_q22
SELECT
    auction, bidder, price, channel,
    SPLIT_INDEX(url, '/', 3) as dir1,
    SPLIT_INDEX(url, '/', 4) as dir2,
    SPLIT_INDEX(url, '/', 5) as dir3 FROM bid;
