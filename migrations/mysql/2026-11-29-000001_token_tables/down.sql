DROP TABLE stamped;
DROP TABLE notes;
DROP TABLE order_lines;
DROP TABLE stock;
DROP TABLE big_counters;
DROP TABLE small_counters;
DROP TABLE counters;
