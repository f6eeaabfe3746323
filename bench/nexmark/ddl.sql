-- The Nexmark tables, as the nexmark/nexmark project's Flink suite declares
-- them (ddl_gen.sql and ddl_views.sql: three views of one generated stream,
-- with a watermark 4 seconds behind), declared for Hummer: ENGINE and
-- CONNECTION instead of WITH (...). ${EVENTS} is the length of the event
-- sequence (0: a stream without end), ${EVENT_RATE} the events per second of
-- event time; the three tables over one seed describe one auction site.
CREATE TABLE person (
    id BIGINT, name TEXT, emailAddress TEXT, creditCard TEXT, city TEXT, state TEXT, dateTime TIMESTAMP, extra TEXT,
    WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND
) ENGINE=nexmark CONNECTION='nexmark://person?events=${EVENTS}&rate=0&event_rate=${EVENT_RATE}';
CREATE TABLE auction (
    id BIGINT, itemName TEXT, description TEXT, initialBid BIGINT, reserve BIGINT, dateTime TIMESTAMP, expires TIMESTAMP,
    seller BIGINT, category BIGINT, extra TEXT,
    WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND
) ENGINE=nexmark CONNECTION='nexmark://auction?events=${EVENTS}&rate=0&event_rate=${EVENT_RATE}';
CREATE TABLE bid (
    auction BIGINT, bidder BIGINT, price BIGINT, channel TEXT, url TEXT, dateTime TIMESTAMP, extra TEXT,
    WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND
) ENGINE=nexmark CONNECTION='nexmark://bid?events=${EVENTS}&rate=0&event_rate=${EVENT_RATE}';
-- q13's bounded side input, as the Flink suite's side_input.txt: ${SIDE_INPUT}
-- is a CSV file of the keys 0 to 9999 and each key's text (sideInputCSV).
CREATE TABLE side_input (`key` BIGINT, `value` TEXT) ENGINE=file CONNECTION='file://${SIDE_INPUT}?format=csv';
