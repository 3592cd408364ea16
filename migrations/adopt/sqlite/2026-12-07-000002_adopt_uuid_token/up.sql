-- A UUID per row (UuidToken: a BLOB of the UUID's 16 bytes, as Diesel's Binary reads
-- it). SQLite adds a NOT NULL column only with a constant default, so the column is
-- added with one (not the nil UUID, which is never a valid token) and every existing
-- row then gets 16 random bytes of its own. A row another writer inserts without a
-- token gets the constant: still a valid token, since a token is only compared within
-- its row.
ALTER TABLE adopt_uuid ADD COLUMN version BLOB NOT NULL
    DEFAULT x'00000000000040008000000000000001';
UPDATE adopt_uuid SET version = randomblob(16);
