-- Query 10: Log to File System (nexmark-flink/src/main/resources/queries/q10.sql, the DDL for Hummer):
-- every bid, with its day and minute, into files partitioned by them. Flink's filesystem sink becomes
-- an ENGINE=file directory table (a path ending in /): PARTITIONED BY (dt, hm) is partition_by=dt,hm,
-- giving ${OUTPUT}/dt=2015-07-15/hm=10:03/part-... files. Flink's rolling and partition-commit options
-- have no counterpart: Hummer's sink commits its files at each checkpoint (or at the end of a bounded
-- input). ${OUTPUT} is the output directory.
CREATE TABLE nexmark_q10 (auction BIGINT, bidder BIGINT, price BIGINT, dateTime TIMESTAMP, extra TEXT, dt TEXT, hm TEXT)
  ENGINE=file CONNECTION='file://${OUTPUT}/?format=csv&partition_by=dt,hm';

INSERT INTO nexmark_q10
SELECT auction, bidder, price, dateTime, extra, DATE_FORMAT(dateTime, 'yyyy-MM-dd'), DATE_FORMAT(dateTime, 'HH:mm')
FROM bid;
