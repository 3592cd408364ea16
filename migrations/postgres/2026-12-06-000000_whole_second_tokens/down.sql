DROP TABLE stamped_seconds;
