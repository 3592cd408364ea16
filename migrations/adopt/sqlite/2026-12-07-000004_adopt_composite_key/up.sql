-- A composite key: the checked writes need the database to keep (order_id, line_no)
-- unique, and SchemaCheck refuses the entity without a PRIMARY KEY or UNIQUE index on
-- exactly these columns. SQLite cannot add a primary key to a table: a unique index
-- counts the same. Remove duplicate keys first: the statement fails while the table
-- holds any.
ALTER TABLE adopt_lines ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
CREATE UNIQUE INDEX adopt_lines_order_id_line_no_key ON adopt_lines (order_id, line_no);
