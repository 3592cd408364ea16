-- A timestamp token at the default whole-second precision (the model-based test): a
-- DATETIME without fraction rounds microseconds away.
CREATE TABLE stamped_seconds (
    id INTEGER PRIMARY KEY,
    value INTEGER NOT NULL,
    updated_at DATETIME NOT NULL
);
