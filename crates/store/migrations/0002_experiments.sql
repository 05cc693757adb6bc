-- Showdown's store, version 2: experiments.
--
-- An experiment's runs are ordinary runs (experiment = its name, a label per axis, and the
-- labels file, scale, cell, repetition and phase); this table keeps what its page needs beyond
-- them: the question, the file it was run from, and how its targets fared in verification.
CREATE TABLE experiments (
    name TEXT PRIMARY KEY,
    question TEXT NOT NULL,
    -- The first 12 hex digits of the SHA-256 of the file last run, and the scale it ran at:
    -- the runs labelled with both are the ones its page shows.
    file_label TEXT NOT NULL,
    scale DOUBLE PRECISION NOT NULL,
    -- JSON: the experiment as run (targets, axes in order, the load), for its page.
    definition TEXT NOT NULL,
    -- JSON list: each target's verification against targets/CONTRACT.md, check by check.
    verification TEXT NOT NULL DEFAULT '[]',
    updated_at_ns BIGINT NOT NULL
);
