-- Timestamp tokens, stored as text as Diesel writes them: SQLite keeps any precision,
-- so whole-second and fractional tokens take the same column type. SQLite adds a
-- NOT NULL column only with a constant default; the existing rows then get the current
-- UTC time, in whole seconds for the default precision and with a fraction for
-- #[occ(version, precision = 6)] (strftime's %f: milliseconds, which Diesel reads).
ALTER TABLE adopt_stamp_seconds ADD COLUMN updated_at TIMESTAMP NOT NULL
    DEFAULT '1970-01-01 00:00:00';
UPDATE adopt_stamp_seconds SET updated_at = datetime('now');
ALTER TABLE adopt_stamp_micros ADD COLUMN updated_at TIMESTAMP NOT NULL
    DEFAULT '1970-01-01 00:00:00';
UPDATE adopt_stamp_micros SET updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now');
