-- Query 4: Average Price for a Category (nexmark-flink/src/main/resources/queries/q4.sql, the DDL for Hummer)
CREATE TABLE nexmark_q4 (id BIGINT, final BIGINT, PRIMARY KEY (id)) ENGINE=blackhole CONNECTION='blackhole://';

INSERT INTO nexmark_q4
SELECT
    Q.category,
    AVG(Q.final)
FROM (
    SELECT MAX(B.price) AS final, A.category
    FROM auction A, bid B
    WHERE A.id = B.auction AND B.`dateTime` BETWEEN A.`dateTime` AND A.expires
    GROUP BY A.id, A.category
) Q
GROUP BY Q.category;
