-- Query 3: Local Item Suggestion (nexmark-flink/src/main/resources/queries/q3.sql, the DDL for Hummer)
CREATE TABLE nexmark_q3 (name TEXT, city TEXT, state TEXT, id BIGINT) ENGINE=blackhole CONNECTION='blackhole://';

INSERT INTO nexmark_q3
SELECT
    P.name, P.city, P.state, A.id
FROM
    auction AS A INNER JOIN person AS P on A.seller = P.id
WHERE
    A.category = 10 and (P.state = 'OR' OR P.state = 'ID' OR P.state = 'CA');
