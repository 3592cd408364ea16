ALTER TABLE adopt_lines DROP CONSTRAINT adopt_lines_pkey;
ALTER TABLE adopt_lines DROP COLUMN version;
