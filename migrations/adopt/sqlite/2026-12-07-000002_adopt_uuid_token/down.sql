ALTER TABLE adopt_uuid DROP COLUMN version;
