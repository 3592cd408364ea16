-- Tables for tracked saves and merge, batch saves, force increment, the bypass-writer
-- guard, bulk updates and soft delete. UUID tokens are BLOBs.
CREATE TABLE wiki_articles (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    summary TEXT,
    views INTEGER NOT NULL DEFAULT 0,
    version INTEGER NOT NULL
);

CREATE TABLE accounts (
    id INTEGER PRIMARY KEY,
    balance INTEGER NOT NULL CHECK (balance >= 0),
    deleted BOOLEAN NOT NULL DEFAULT FALSE,
    version INTEGER NOT NULL
);

CREATE TABLE purchase_orders (
    id INTEGER PRIMARY KEY,
    note TEXT NOT NULL,
    version INTEGER NOT NULL
);

CREATE TABLE purchase_order_items (
    order_id INTEGER NOT NULL REFERENCES purchase_orders (id),
    line_no INTEGER NOT NULL,
    quantity INTEGER NOT NULL,
    version INTEGER NOT NULL,
    PRIMARY KEY (order_id, line_no)
);

CREATE TABLE tickets (
    id INTEGER PRIMARY KEY,
    seat TEXT NOT NULL,
    version BLOB NOT NULL
);

