-- Query 20: Expand bid with auction (nexmark-flink/src/main/resources/queries/q20.sql, the DDL for Hummer)
CREATE TABLE nexmark_q20 (
    auction BIGINT, bidder BIGINT, price BIGINT, channel TEXT, url TEXT, bid_dateTime TIMESTAMP, bid_extra TEXT,
    itemName TEXT, description TEXT, initialBid BIGINT, reserve BIGINT, auction_dateTime TIMESTAMP, expires TIMESTAMP,
    seller BIGINT, category BIGINT, auction_extra TEXT
) ENGINE=blackhole CONNECTION='blackhole://';

INSERT INTO nexmark_q20
SELECT
    auction, bidder, price, channel, url, B.`dateTime`, B.extra,
    itemName, description, initialBid, reserve, A.`dateTime`, expires, seller, category, A.extra
FROM
    bid AS B INNER JOIN auction AS A on B.auction = A.id
WHERE A.category = 10;
