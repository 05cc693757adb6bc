-- Showdown's store, version 1: one schema for SQLite and Postgres.
--
-- Portable on purpose: BIGINT, DOUBLE PRECISION, TEXT and BYTEA mean the same to both (SQLite
-- keeps BLOBs as given whatever the column's declared type); times are integer nanoseconds
-- (Unix time for wall clocks, offsets from the run's time zero for timelines); ids are made by
-- the application (UUID v7), so no autoincrement; JSON is TEXT.

-- One run of loadgen. Several gun hosts running one experiment together write one run each,
-- sharing a run_group, each with its shard index and count; reading the group merges them.
CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    experiment TEXT,
    run_group TEXT,
    shard_index BIGINT NOT NULL DEFAULT 0,
    shard_count BIGINT NOT NULL DEFAULT 1,
    -- running (or killed before it could say otherwise), complete, incomplete
    status TEXT NOT NULL,
    stop_reason TEXT,
    tool_version TEXT NOT NULL,
    -- Wall-clock time of time zero: request 0's intended send time.
    started_at_ns BIGINT NOT NULL,
    ended_at_ns BIGINT,
    interval_ns BIGINT NOT NULL,
    -- JSON: the attack as configured (target, load, flags), enough to run it again.
    config TEXT NOT NULL,
    -- JSON: facts about the gun host (kernel, CPUs, memory, FD limits).
    gun_host TEXT NOT NULL,
    -- JSON: the end-of-run summary (schema showdown.loadgen.summary/1), once there is one.
    summary TEXT,
    -- JSON list: the generator's and the store's warnings.
    warnings TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX runs_by_group ON runs (run_group);
CREATE INDEX runs_by_experiment ON runs (experiment);

CREATE TABLE run_labels (
    run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (run_id, key)
);
CREATE INDEX run_labels_by_pair ON run_labels (key, value);

-- The load, interval by interval (completions are counted in the interval they happened in).
CREATE TABLE intervals (
    run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    idx BIGINT NOT NULL,
    -- Offset of the interval's start from time zero, and its length.
    start_ns BIGINT NOT NULL,
    length_ns BIGINT NOT NULL,
    requests BIGINT NOT NULL,
    sent BIGINT NOT NULL,
    responses BIGINT NOT NULL,
    ok BIGINT NOT NULL,
    bytes_in BIGINT NOT NULL,
    bytes_out BIGINT NOT NULL,
    sent_late_beyond_interval BIGINT NOT NULL,
    waited_for_connection BIGINT NOT NULL,
    connections_opened BIGINT NOT NULL,
    in_flight BIGINT NOT NULL,
    connections_open BIGINT NOT NULL,
    -- JSON objects: count by error kind, count by status code.
    errors TEXT NOT NULL,
    status_codes TEXT NOT NULL,
    -- HdrHistograms, nanoseconds, in HdrHistogram's V2 format, DEFLATE-compressed.
    corrected BYTEA NOT NULL,
    service BYTEA NOT NULL,
    first_byte BYTEA NOT NULL,
    lateness BYTEA NOT NULL,
    -- A few percentiles spelled out, for plain SQL.
    corrected_p50_ns BIGINT NOT NULL,
    corrected_p99_ns BIGINT NOT NULL,
    corrected_max_ns BIGINT NOT NULL,
    PRIMARY KEY (run_id, idx)
);

-- The probes a run subscribed to, with their host facts and the clock alignment used.
CREATE TABLE probes (
    run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    probe_idx BIGINT NOT NULL,
    address TEXT NOT NULL,
    -- JSON: the probe's host facts (kernel, CPUs, memory, FD limits, what it watches).
    host TEXT NOT NULL,
    -- The probe's monotonic clock minus the gun's, and how uncertain that is (half the
    -- shortest ping round trip); null until measured.
    clock_offset_ns BIGINT,
    clock_uncertainty_ns BIGINT,
    -- The same for wall clocks.
    wall_offset_ns BIGINT,
    PRIMARY KEY (run_id, probe_idx)
);

-- Every sample and event a probe sent during the run (with pre-roll and post-roll).
CREATE TABLE probe_records (
    run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    probe_idx BIGINT NOT NULL,
    seq BIGINT NOT NULL,
    -- sample or event
    kind TEXT NOT NULL,
    -- On the run's timeline: nanoseconds from time zero on the gun's clock (negative in the
    -- pre-roll), from the probe's monotonic time and the clock offset.
    t_ns BIGINT NOT NULL,
    probe_mono_ns BIGINT NOT NULL,
    wall_ns BIGINT NOT NULL,
    -- The tree's totals, spelled out for plain SQL (null for events).
    cpu_pct DOUBLE PRECISION,
    rss_bytes BIGINT,
    threads BIGINT,
    fds BIGINT,
    -- JSON: the record as the probe sent it.
    body TEXT NOT NULL,
    PRIMARY KEY (run_id, probe_idx, seq)
);

-- Records a run should have and does not: the probe's buffer evicted them, or the link could
-- not be restored in time.
CREATE TABLE probe_gaps (
    run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    probe_idx BIGINT NOT NULL,
    from_seq BIGINT NOT NULL,
    -- Inclusive; null when the end is unknown (the link never came back).
    to_seq BIGINT,
    t_ns BIGINT NOT NULL,
    reason TEXT NOT NULL
);
