-- No version column: an entity of this table is guarded by the values of its check
-- columns (`#[occ(check)]`), `label` (nullable) and `qty`; `note` is not checked.
CREATE TABLE shelf_items (
    id INTEGER PRIMARY KEY,
    label TEXT,
    qty INTEGER NOT NULL,
    note TEXT NOT NULL
);
