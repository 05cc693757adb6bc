'use strict';
// The database: pg's Pool, bounded so that a database that is down, stopped or frozen is
// answered 503 within DB_TIMEOUT_MS, and recovered from without a restart.

const { Pool } = require('pg');

function createPool(settings, size) {
  if (!settings.databaseUrl) return null;
  const pool = new Pool({
    connectionString: settings.databaseUrl,
    max: size,
    // Waiting for a pooled connection (or a new one) ends here...
    connectionTimeoutMillis: settings.dbTimeoutMs,
    // ...and so does waiting for a query's answer; a client that timed out is discarded.
    query_timeout: settings.dbTimeoutMs,
    idleTimeoutMillis: 30000,
  });
  // An idle client whose server went away emits here; without a listener the process dies.
  pool.on('error', (err) => console.error(`database: idle connection lost: ${err.message}`));
  return pool;
}

module.exports = { createPool };
