-- Query 19: Auction TOP-10 Price (nexmark-flink/src/main/resources/queries/q19.sql, the DDL for Hummer)
-- What's the top price 10 bids of an auction? Illustrates a TOP-N query.
CREATE TABLE nexmark_q19 (auction BIGINT, bidder BIGINT, price BIGINT, channel TEXT, url TEXT, dateTime TIMESTAMP, extra TEXT,
  rank_number BIGINT, PRIMARY KEY (auction, rank_number)) ENGINE=blackhole CONNECTION='blackhole://';

INSERT INTO nexmark_q19
SELECT * FROM
(SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rank_number FROM bid)
WHERE rank_number <= 10;
