ALTER TABLE adopt_stamp_micros DROP COLUMN updated_at;
ALTER TABLE adopt_stamp_seconds DROP COLUMN updated_at;
