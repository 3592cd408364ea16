-- Stands in for a user's existing data: tables without a token column, with rows, one
-- per token kind the next migrations add, and adopt_lines, whose composite key nothing
-- keeps unique yet.
CREATE TABLE adopt_integer (id INTEGER PRIMARY KEY, name TEXT NOT NULL, quantity INTEGER NOT NULL);
CREATE TABLE adopt_uuid (id INTEGER PRIMARY KEY, name TEXT NOT NULL, quantity INTEGER NOT NULL);
CREATE TABLE adopt_stamp_seconds (id INTEGER PRIMARY KEY, name TEXT NOT NULL, quantity INTEGER NOT NULL);
CREATE TABLE adopt_stamp_micros (id INTEGER PRIMARY KEY, name TEXT NOT NULL, quantity INTEGER NOT NULL);
CREATE TABLE adopt_lines (order_id INTEGER NOT NULL, line_no INTEGER NOT NULL, quantity INTEGER NOT NULL);

INSERT INTO adopt_integer VALUES (1, 'bolt', 10), (2, 'nut', 20), (3, 'washer', 30);
INSERT INTO adopt_uuid VALUES (1, 'bolt', 10), (2, 'nut', 20), (3, 'washer', 30);
INSERT INTO adopt_stamp_seconds VALUES (1, 'bolt', 10), (2, 'nut', 20), (3, 'washer', 30);
INSERT INTO adopt_stamp_micros VALUES (1, 'bolt', 10), (2, 'nut', 20), (3, 'washer', 30);
INSERT INTO adopt_lines VALUES (1, 1, 5), (1, 2, 6), (2, 1, 7);
