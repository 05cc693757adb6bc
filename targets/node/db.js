'use strict';
// The database: pg's Pool, bounded so that a database that is down, stopped or frozen is
// answered 503 within DB_TIMEOUT_MS, never a hang, and recovered from without a restart (the
// pool connects on demand: a client that failed is dropped, the next request dials again).

const { Pool, DatabaseError } = require('pg');

// A failure of the database, worded for the 503 it becomes.
function explain(err, timeoutMs, deadline) {
  // The server answered with an error of its own.
  if (err instanceof DatabaseError) {
    return new Error(`database error: ${err.message} (SQLSTATE ${err.code})`);
  }
  // pg's timers fire a hair early or late: a failure this close to the deadline is the timeout.
  if (Date.now() >= deadline - 20) {
    return new Error(`database unavailable: no answer within ${timeoutMs} ms (${err.message})`);
  }
  return new Error(`database unavailable: ${err.message}`);
}

// The pool of at most `size` connections, or null without DATABASE_URL.
function createDatabase({ databaseUrl, dbTimeoutMs }, size) {
  if (!databaseUrl) return null;
  const pool = new Pool({
    connectionString: databaseUrl,
    max: size,
    // Waiting for a pooled connection, or for a new one to be made, ends here; a connection
    // attempt that runs out of time is torn down, so a frozen server holds no slot for long.
    connectionTimeoutMillis: dbTimeoutMs,
    idleTimeoutMillis: 30000,
    // TCP keep-alive notices a server host that vanished while a connection sat idle.
    keepAlive: true,
    application_name: 'showdown-target-node',
  });
  // An idle connection whose server went away emits here; without a listener the process
  // would die. The pool has already dropped it.
  pool.on('error', (err) => console.error(`database: an idle connection failed: ${err.message}`));

  // Runs one statement. One deadline covers waiting for a connection and then the query: the
  // query gets what is left. A connection that failed or ran out of time is released with the
  // error, so that the pool closes it instead of handing it out again.
  async function query(text, values) {
    const deadline = Date.now() + dbTimeoutMs;
    let client;
    try {
      client = await pool.connect();
    } catch (err) {
      throw explain(err, dbTimeoutMs, deadline);
    }
    const left = deadline - Date.now();
    if (left <= 0) {
      client.release();
      throw explain(new Error('no time left for the query'), dbTimeoutMs, deadline);
    }
    return new Promise((resolve, reject) => {
      let done = false;
      const finish = (err, result) => {
        if (done) return;
        done = true;
        client.removeListener('error', finish);
        client.release(err);
        if (err) reject(explain(err, dbTimeoutMs, deadline));
        else resolve(result);
      };
      // The connection can fail outside the query's own callback (as pool.query guards too).
      client.on('error', finish);
      try {
        client.query({ text, values, query_timeout: left }, finish);
      } catch (err) {
        finish(err);
      }
    });
  }

  // Closes the idle connections; call it once the requests are finished.
  function close() {
    return pool.end();
  }

  return { query, close };
}

module.exports = { createDatabase };
