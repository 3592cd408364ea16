-- A composite key: the checked writes need the database to keep (order_id, line_no)
-- unique, and SchemaCheck refuses the entity without a PRIMARY KEY or UNIQUE index on
-- exactly these columns. Remove duplicate keys first: the statement fails while the
-- table holds any.
ALTER TABLE adopt_lines ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
ALTER TABLE adopt_lines ADD PRIMARY KEY (order_id, line_no);
