-- A timestamp token at the default whole-second precision (the model-based test): the
-- column keeps no fraction, so a token with microseconds would be rounded away.
CREATE TABLE stamped_seconds (
    id INTEGER PRIMARY KEY,
    value INTEGER NOT NULL,
    updated_at TIMESTAMP(0) NOT NULL
);
