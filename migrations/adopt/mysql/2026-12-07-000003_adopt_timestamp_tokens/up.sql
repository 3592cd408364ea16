-- Timestamp tokens, in DATETIME columns at the precision the entity declares: DATETIME
-- (whole seconds) by default, DATETIME(6) for #[occ(version, precision = 6)]. The
-- existing rows get the current time in the session's time zone (UTC on a Diesel
-- connection, which sets time_zone = '+00:00'). A DEFAULT is fine; never add
-- ON UPDATE CURRENT_TIMESTAMP, which can move a token back (SchemaCheck refuses it),
-- and prefer DATETIME to TIMESTAMP, which MySQL may give that clause by itself
-- (explicit_defaults_for_timestamp = OFF).
ALTER TABLE adopt_stamp_seconds
    ADD COLUMN updated_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP;
ALTER TABLE adopt_stamp_micros
    ADD COLUMN updated_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6);
