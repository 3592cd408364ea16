-- Timestamp tokens, in columns at the precision the entity declares: timestamp(0) for
-- the default whole seconds, timestamp(6) for #[occ(version, precision = 6)]. The
-- existing rows get the current UTC time (diesel-occ's clock; the default is evaluated
-- once, so they share it: a token need only be unique within its row's history).
ALTER TABLE adopt_stamp_seconds
    ADD COLUMN updated_at timestamp(0) NOT NULL DEFAULT (now() AT TIME ZONE 'UTC');
ALTER TABLE adopt_stamp_micros
    ADD COLUMN updated_at timestamp(6) NOT NULL DEFAULT (now() AT TIME ZONE 'UTC');
