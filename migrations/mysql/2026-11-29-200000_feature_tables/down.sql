DROP TABLE tickets;
DROP TABLE purchase_order_items;
DROP TABLE purchase_orders;
DROP TABLE accounts;
DROP TABLE wiki_articles;
