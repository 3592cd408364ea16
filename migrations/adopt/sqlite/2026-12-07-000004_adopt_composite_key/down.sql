DROP INDEX adopt_lines_order_id_line_no_key;
ALTER TABLE adopt_lines DROP COLUMN version;
