-- Tables of the example apps (examples/). One Diesel schema serves all three backends,
-- so UUID tokens are stored as 16 bytes (BINARY(16) here, BYTEA on PostgreSQL, BLOB on
-- SQLite); a PostgreSQL-only app would declare them UUID.

-- Inventory reservation with a client-held token.
CREATE TABLE inventory (
    sku VARCHAR(32) PRIMARY KEY,
    name VARCHAR(100) NOT NULL,
    available INTEGER NOT NULL,
    version BINARY(16) NOT NULL,
    -- The final guard: whatever a writer computed, stock never goes negative.
    CONSTRAINT inventory_available_nonnegative CHECK (available >= 0)
);

-- The last concert seat.
CREATE TABLE concerts (
    id INTEGER PRIMARY KEY,
    name VARCHAR(100) NOT NULL,
    capacity INTEGER NOT NULL,
    available INTEGER NOT NULL,
    version INTEGER NOT NULL,
    CONSTRAINT concerts_available_in_range CHECK (available >= 0 AND available <= capacity)
);

CREATE TABLE seat_assignments (
    concert_id INTEGER NOT NULL REFERENCES concerts (id),
    seat_no INTEGER NOT NULL,
    buyer VARCHAR(64) NOT NULL,
    -- The final durable guard: one confirmed holder per seat.
    CONSTRAINT seat_assignments_one_holder UNIQUE (concert_id, seat_no)
);

-- Work items claimed by competing workers, with leases and fencing tokens.
CREATE TABLE work_items (
    id INTEGER PRIMARY KEY,
    payload VARCHAR(200) NOT NULL,
    status VARCHAR(16) NOT NULL,
    lease_owner VARCHAR(64),
    -- Milliseconds since the Unix epoch; set while PROCESSING.
    lease_expires_at BIGINT,
    -- The fencing token: +1 on every claim, never reused.
    fence BIGINT NOT NULL,
    version BIGINT NOT NULL,
    CONSTRAINT work_items_status_known CHECK (status IN ('PENDING', 'PROCESSING', 'DONE'))
);

-- The handlers' effects, keyed by item: a duplicate delivery cannot apply twice.
CREATE TABLE work_effects (
    item_id INTEGER PRIMARY KEY REFERENCES work_items (id),
    worker VARCHAR(64) NOT NULL,
    fence BIGINT NOT NULL
);

-- The HTTP CRUD service: the token is the ETag.
CREATE TABLE articles (
    id VARCHAR(36) PRIMARY KEY,
    title VARCHAR(200) NOT NULL,
    body TEXT NOT NULL,
    version BINARY(16) NOT NULL
);
