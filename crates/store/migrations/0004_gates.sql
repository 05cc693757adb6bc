-- Showdown's store, version 4: the gates of comparisons ([compare]).
--
-- A comparison's runs are ordinary runs of its experiment; this table keeps each sitting's
-- verdict as the command printed it (store::ab::Gate), for the experiment's page and for a
-- later look at what a pull request's gate said.
CREATE TABLE gates (
    id TEXT PRIMARY KEY,
    experiment TEXT NOT NULL,
    -- The setting it compared at, in words ("" for a file without axes).
    setting TEXT NOT NULL,
    -- The file and scale its runs are labelled with (as in experiments).
    file_label TEXT NOT NULL,
    scale DOUBLE PRECISION NOT NULL,
    judged_at_ns BIGINT NOT NULL,
    -- JSON: the gate (store::ab::Gate).
    body TEXT NOT NULL
);
