-- A UUID per row (UuidToken: BINARY(16), the UUID's 16 bytes in their usual order):
-- added as NULL, filled row by row (UUID() is evaluated for each row), then made
-- NOT NULL. UNHEX(REPLACE(UUID(), '-', '')) is MySQL 8's UUID_TO_BIN(UUID()); it runs
-- on MariaDB and MySQL alike. (MariaDB's UUID type is not what UuidToken maps to.)
ALTER TABLE adopt_uuid ADD COLUMN version BINARY(16) NULL;
UPDATE adopt_uuid SET version = UNHEX(REPLACE(UUID(), '-', ''));
ALTER TABLE adopt_uuid MODIFY version BINARY(16) NOT NULL;
