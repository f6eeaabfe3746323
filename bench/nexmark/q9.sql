-- Query 9: Winning Bids (nexmark-flink/src/main/resources/queries/q9.sql, the DDL for Hummer; the
-- release whose tables have dateTime, not customTime). Find the winning bid for each auction.
-- Over bounded tables its join is a hash join; over streams it needs a join of two streams.
CREATE TABLE nexmark_q9 (id BIGINT, itemName TEXT, description TEXT, initialBid BIGINT, reserve BIGINT, dateTime TIMESTAMP,
  expires TIMESTAMP, seller BIGINT, category BIGINT, extra TEXT, auction BIGINT, bidder BIGINT, price BIGINT,
  bid_dateTime TIMESTAMP, bid_extra TEXT, PRIMARY KEY (id)) ENGINE=blackhole CONNECTION='blackhole://';

INSERT INTO nexmark_q9
SELECT
    id, itemName, description, initialBid, reserve, dateTime, expires, seller, category, extra,
    auction, bidder, price, bid_dateTime, bid_extra
FROM (
   SELECT A.*, B.auction, B.bidder, B.price, B.dateTime AS bid_dateTime, B.extra AS bid_extra,
     ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.dateTime ASC) AS rownum
   FROM auction A, bid B
   WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires
)
WHERE rownum <= 1;
