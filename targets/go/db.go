package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// database is the pool and the statements of the contract, each bounded by DB_TIMEOUT_MS so
// that a database that is down, stopped or frozen is answered 503 in time, never a hang.
type database struct {
	pool    *pgxpool.Pool
	timeout time.Duration
}

// openDatabase makes a pool of at most maxConns connections. It does not connect: pgxpool
// dials on the first Acquire (MinConns is 0), so a database that is down at start is not an
// error, and one that comes back is connected to again without a restart.
func openDatabase(url string, maxConns int32, timeout time.Duration) (*database, error) {
	config, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	config.MaxConns = maxConns
	// A connection attempt goes on in the background after the Acquire that started it gave up;
	// this bounds it, so that a frozen database does not hold pool slots for pgx's 2 minutes.
	config.ConnConfig.ConnectTimeout = timeout
	pool, err := pgxpool.NewWithConfig(context.Background(), config)
	if err != nil {
		return nil, err
	}
	return &database{pool: pool, timeout: timeout}, nil
}

// insertUserSQL is the one statement of POST /users.
const insertUserSQL = "INSERT INTO users (email, password) VALUES ($1, $2) RETURNING id"

// insertUser inserts one row and returns its id. One deadline covers waiting for a pooled
// connection (or a new one) and then the query; a connection whose query ran out of time is
// closed by pgx and dropped from the pool.
func (db *database) insertUser(ctx context.Context, email, password string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, db.timeout)
	defer cancel()
	var id int64
	err := db.pool.QueryRow(ctx, insertUserSQL, email, password).Scan(&id)
	return id, db.explain(err)
}

// ping runs SELECT 1, for /healthz.
func (db *database) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, db.timeout)
	defer cancel()
	_, err := db.pool.Exec(ctx, "SELECT 1")
	return db.explain(err)
}

// explain words a failure for the 503 it becomes.
func (db *database) explain(err error) error {
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("database unavailable: no answer within %v", db.timeout)
	case errors.As(err, &pgErr):
		return fmt.Errorf("database error: %s (SQLSTATE %s)", pgErr.Message, pgErr.Code)
	default:
		return fmt.Errorf("database unavailable: %w", err)
	}
}

// close closes the pool's connections; it waits for those in use, so call it once the server
// has finished its requests.
func (db *database) close() {
	db.pool.Close()
}
