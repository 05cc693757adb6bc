-- Showdown's store, version 3: capacity searches.
--
-- A search's steps are ordinary runs (labels search = its id, step = its number); this table
-- keeps the search itself: the SLO, its settings, each step's verdict with its reason, and the
-- bracket it found, for its page.
CREATE TABLE searches (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    -- The experiment it is a cell of, if any.
    experiment TEXT,
    -- running, found, interrupted, …
    status TEXT NOT NULL,
    started_at_ns BIGINT NOT NULL,
    updated_at_ns BIGINT NOT NULL,
    -- JSON: the whole search (store::capacity::Search).
    body TEXT NOT NULL
);
