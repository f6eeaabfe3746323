-- Query 7: Highest Bid (nexmark-flink/src/main/resources/queries/q7.sql, the DDL for Hummer)
CREATE TABLE nexmark_q7 (auction BIGINT, bidder BIGINT, price BIGINT, dateTime TIMESTAMP, extra TEXT) ENGINE=blackhole CONNECTION='blackhole://';

INSERT INTO nexmark_q7
SELECT B.auction, B.bidder, B.price, B.dateTime, B.extra
from bid B
JOIN (
  SELECT MAX(price) AS maxprice, window_end as dateTime
  FROM TABLE(
          TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
  GROUP BY window_start, window_end
) B1
ON B.price = B1.maxprice
WHERE B.dateTime BETWEEN B1.dateTime  - INTERVAL '10' SECOND AND B1.dateTime;
