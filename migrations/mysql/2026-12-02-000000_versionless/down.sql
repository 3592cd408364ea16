DROP TABLE shelf_items;
