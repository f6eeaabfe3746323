-- Query 21: Add channel id (nexmark-flink/src/main/resources/queries/q21.sql, the DDL for Hummer)
CREATE TABLE nexmark_q21 (auction BIGINT, bidder BIGINT, price BIGINT, channel TEXT, channel_id TEXT) ENGINE=blackhole CONNECTION='blackhole://';

INSERT INTO nexmark_q21
SELECT
    auction, bidder, price, channel,
    CASE
        WHEN lower(channel) = 'apple' THEN '0'
        WHEN lower(channel) = 'google' THEN '1'
        WHEN lower(channel) = 'facebook' THEN '2'
        WHEN lower(channel) = 'baidu' THEN '3'
        ELSE REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2)
        END
    AS channel_id FROM bid
    where REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2) is not null or
          lower(channel) in ('apple', 'google', 'facebook', 'baidu');
