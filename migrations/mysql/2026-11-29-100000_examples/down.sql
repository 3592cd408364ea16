DROP TABLE articles;
DROP TABLE work_effects;
DROP TABLE work_items;
DROP TABLE seat_assignments;
DROP TABLE concerts;
DROP TABLE inventory;
