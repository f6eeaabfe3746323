DROP TABLE IF EXISTS ot
CREATE TABLE ot (id BIGINT PRIMARY KEY, name TEXT NOT NULL, price DECIMAL(10,2), d DATE)
INSERT INTO ot VALUES (1, 'apple', 1.50, '2024-01-01'), (2, 'banana', 0.25, '2024-02-29'), (3, 'cherry', NULL, NULL), (4, 'date', 12.00, '2023-12-31')
help
help ot
SELECT id, name, price, d FROM ot ORDER BY id
SELECT count(*), sum(price), min(d), max(name) FROM ot WHERE d IS NOT NULL
SELECT name FROM ot WHERE price > 1 ORDER BY name DESC
