-- Tables the checked-write scenarios exercise, one per token kind and key shape.
-- DATETIME(6): a timestamp token needs microseconds (DATETIME alone keeps whole seconds).
-- No stamped_utc: Diesel maps DateTime<Utc> only on PostgreSQL and SQLite.
CREATE TABLE counters (
    id INTEGER PRIMARY KEY,
    value INTEGER NOT NULL,
    label TEXT,
    version INTEGER NOT NULL
);

CREATE TABLE small_counters (
    id INTEGER PRIMARY KEY,
    value INTEGER NOT NULL,
    version SMALLINT NOT NULL
);

CREATE TABLE big_counters (
    id INTEGER PRIMARY KEY,
    value INTEGER NOT NULL,
    version BIGINT NOT NULL
);

CREATE TABLE stock (
    id INTEGER PRIMARY KEY,
    available INTEGER NOT NULL CHECK (available >= 0),
    version BINARY(16) NOT NULL
);

CREATE TABLE order_lines (
    order_id INTEGER NOT NULL,
    line_no INTEGER NOT NULL,
    quantity INTEGER NOT NULL,
    version INTEGER NOT NULL,
    PRIMARY KEY (order_id, line_no)
);

CREATE TABLE notes (
    note_id INTEGER PRIMARY KEY,
    note_text TEXT NOT NULL,
    rev INTEGER NOT NULL
);

CREATE TABLE stamped (
    id INTEGER PRIMARY KEY,
    value INTEGER NOT NULL,
    updated_at DATETIME(6) NOT NULL
);

