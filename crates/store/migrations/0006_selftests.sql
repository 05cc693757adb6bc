-- Showdown's store, version 6: what `loadgen selftest` measured of a machine.
--
-- One row a self-test: the host it ran on (its hostname, as each run's gun_host names it), when,
-- and its figures as JSON (store::selftest::SelfTest): the clock, a timed wake-up, the
-- coordinated-omission check against a server that freezes, and the most one thread paces
-- cleanly. The pages of runs on that host cite the newest.
CREATE TABLE selftests (
    id TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    measured_at_ns BIGINT NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX selftests_host ON selftests (host, measured_at_ns);
