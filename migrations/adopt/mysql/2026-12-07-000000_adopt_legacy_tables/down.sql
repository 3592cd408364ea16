DROP TABLE adopt_lines;
DROP TABLE adopt_stamp_micros;
DROP TABLE adopt_stamp_seconds;
DROP TABLE adopt_uuid;
DROP TABLE adopt_integer;
