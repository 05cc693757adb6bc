-- The table of the showdown write-up (000/001): one row per POST /users.
-- Idempotent: apply it as often as you like (psql "$DATABASE_URL" -f targets/schema.sql).
CREATE TABLE IF NOT EXISTS users (
    id serial PRIMARY KEY,
    email varchar(255) NOT NULL,
    password varchar(255) NOT NULL
);
