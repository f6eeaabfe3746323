-- Query 6: Average Selling Price by Seller (nexmark-flink/src/main/resources/queries/q6.sql, the DDL for
-- Hummer; dateTime for customTime as in q9). What is the average selling price per seller for their last
-- 10 closed auctions. Flink cannot run it (FLINK-19059: its OVER window does not read retractions);
-- Hummer plans it as an over_window, whose rows change as the winning bids do. As published the filter
-- on rownum sits in the SELECT that names it and the inner columns keep their table qualifiers; here
-- the winning bids are a derived table of their own, filtered outside, as in q9. The blackhole takes
-- changes with a PRIMARY KEY; a seller has a row per auction, so a table that kept them would need
-- the auction in its key (cmd/hummer/nexmark_q6_test.go).
CREATE TABLE nexmark_q6 (seller BIGINT, avg_price BIGINT, PRIMARY KEY (seller)) ENGINE=blackhole CONNECTION='blackhole://';

INSERT INTO nexmark_q6
SELECT
    Q.seller,
    AVG(Q.price) OVER
        (PARTITION BY Q.seller ORDER BY Q.dateTime ROWS BETWEEN 10 PRECEDING AND CURRENT ROW)
FROM (
    SELECT * FROM (
        SELECT *, ROW_NUMBER() OVER (PARTITION BY W.id, W.seller ORDER BY W.price DESC) AS rownum
        FROM (SELECT A.id, A.seller, B.price, B.dateTime
            FROM auction AS A,
                bid AS B
            WHERE A.id = B.auction
                and B.dateTime between A.dateTime and A.expires) AS W
    ) AS R
    WHERE rownum <= 1
) AS Q;
