-- The table of the showdown write-up (000/001): one row per POST /users.
-- Idempotent: apply it as often as you like (psql "$DATABASE_URL" -f targets/schema.sql).
CREATE TABLE IF NOT EXISTS users (
    id serial PRIMARY KEY,
    email varchar(255) NOT NULL,
    password varchar(255) NOT NULL
);
-- The mark of a table Showdown made: the experiment runner empties `users` before each cell,
-- and only when it finds this comment (a table of this name without it is someone else's).
COMMENT ON TABLE users IS 'showdown: targets/schema.sql (the experiment runner empties this table before each cell)';
