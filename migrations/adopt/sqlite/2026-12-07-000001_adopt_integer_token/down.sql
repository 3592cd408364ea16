ALTER TABLE adopt_integer DROP COLUMN version;
