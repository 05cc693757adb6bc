-- Showdown's store, version 5: requests sent again on a new connection.
--
-- When a server closes a reused keep-alive connection as the next request goes out, the
-- generator sends that request again on a new connection (idempotent methods only, once), as
-- browsers and Go's client do. Each interval counts those resends; runs stored before this
-- version had none (the generator then counted the request as a reset).
ALTER TABLE intervals ADD COLUMN resent BIGINT NOT NULL DEFAULT 0;
