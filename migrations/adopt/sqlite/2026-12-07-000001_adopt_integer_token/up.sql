-- An integer counter: the constant default gives every existing row the token 1 (the
-- token of a row never saved; only equality matters), and NOT NULL holds at once.
ALTER TABLE adopt_integer ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
