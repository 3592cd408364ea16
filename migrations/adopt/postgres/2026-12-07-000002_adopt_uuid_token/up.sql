-- A UUID per row (uuid::Uuid or UuidToken in a uuid column): a volatile default is
-- evaluated for each existing row, so every row gets a token of its own.
-- gen_random_uuid() is built in from PostgreSQL 13 (pgcrypto's before).
ALTER TABLE adopt_uuid ADD COLUMN version uuid NOT NULL DEFAULT gen_random_uuid();
