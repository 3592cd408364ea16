-- A timestamp token at the default whole-second precision (the model-based test),
-- stored as text as Diesel writes it.
CREATE TABLE stamped_seconds (
    id INTEGER PRIMARY KEY,
    value INTEGER NOT NULL,
    updated_at TIMESTAMP NOT NULL
);
