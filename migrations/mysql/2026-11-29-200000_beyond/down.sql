DROP TABLE beyond_tickets;
DROP TABLE beyond_order_items;
DROP TABLE beyond_orders;
DROP TABLE beyond_accounts;
DROP TABLE beyond_articles;
