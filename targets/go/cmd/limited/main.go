// Command limited is a server whose limit is built in, for Showdown's tests of what limited a
// server: each request of GET /work spends what LIMIT names, so the resource that runs out
// first under load is known before the load starts.
//
//   - LIMIT=cpu: WORK_US microseconds of CPU a request (a busy loop on the request's
//     goroutine). Under more load than its CPUs can give, its CPU is the limit; held to a
//     cgroup quota below one CPU, the quota is.
//   - LIMIT=pool: a pool of POOL connections to DATABASE_URL, each held SLEEP_MS a request by
//     pg_sleep. The pool runs out; neither the server's CPU nor the database's does.
//   - LIMIT=query: a query of QUERY_ROWS rows of arithmetic a request on DATABASE_URL, the
//     pool large: the database's CPU runs out, the server's does not.
//
// It listens on 127.0.0.1:PORT and prints one line, "ready", once it does. GET /healthz answers
// 200. SIGTERM or SIGINT stops it.
package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

func main() {
	os.Exit(run())
}

// setting reads a whole number from the environment, or def when it is not set.
func setting(name string, def int) (int, error) {
	text := os.Getenv(name)
	if text == "" {
		return def, nil
	}
	n, err := strconv.Atoi(text)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s=%q is not a whole number (set it to one, e.g. %d)", name, text, def)
	}
	return n, nil
}

func run() int {
	port, err := setting("PORT", 8080)
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		return 2
	}
	handler, cleanup, err := limitHandler(os.Getenv("LIMIT"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		return 2
	}
	defer cleanup()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	listener, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: cannot listen on port %d: %v (change PORT)\n", port, err)
		return 1
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("GET /work", handler)
	server := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = server.Shutdown(shutdown)
	}()
	fmt.Println("ready")
	if err := server.Serve(listener); err != nil && err != http.ErrServerClosed {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		return 1
	}
	return 0
}

// limitHandler is the handler of GET /work for the limit named, and what to close at the end.
func limitHandler(limit string) (http.HandlerFunc, func(), error) {
	none := func() {}
	switch limit {
	case "cpu":
		us, err := setting("WORK_US", 1000)
		if err != nil {
			return nil, none, err
		}
		rounds := calibrate() * us / 1000
		return func(w http.ResponseWriter, _ *http.Request) {
			spin(rounds)
			w.WriteHeader(http.StatusOK)
		}, none, nil
	case "pool", "query":
		conns, err := setting("POOL", 2)
		if err != nil {
			return nil, none, err
		}
		sleep, err := setting("SLEEP_MS", 5)
		if err != nil {
			return nil, none, err
		}
		rows, err := setting("QUERY_ROWS", 200000)
		if err != nil {
			return nil, none, err
		}
		config, err := pgxpool.ParseConfig(os.Getenv("DATABASE_URL"))
		if err != nil {
			return nil, none, fmt.Errorf("DATABASE_URL cannot be used: %v (set it to a PostgreSQL URL)", err)
		}
		config.MaxConns = int32(conns)
		pool, err := pgxpool.NewWithConfig(context.Background(), config)
		if err != nil {
			return nil, none, fmt.Errorf("cannot make the pool: %v (fix DATABASE_URL)", err)
		}
		sql, arg := "SELECT pg_sleep($1::float8 / 1000)", any(sleep)
		if limit == "query" {
			sql, arg = "SELECT sum(sqrt(i::float8)) FROM generate_series(1, $1::int) AS i", any(rows)
		}
		return func(w http.ResponseWriter, r *http.Request) {
			ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
			defer cancel()
			if _, err := pool.Exec(ctx, sql, arg); err != nil {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
			w.WriteHeader(http.StatusOK)
		}, pool.Close, nil
	default:
		return nil, none, fmt.Errorf("LIMIT=%q is not a limit this server has (set it to cpu, pool or query)", limit)
	}
}

// sink keeps the compiler from dropping the loop.
var sink float64

// spin does rounds of arithmetic: a fixed amount of CPU, however the goroutine is scheduled
// (a loop until a wall-clock time would spend less CPU when goroutines share a CPU).
func spin(rounds int) {
	x := 1.0
	for i := 0; i < rounds; i++ {
		x = x*1.0000001 + 1e-9
	}
	sink = x
}

// calibrate measures the rounds of spin one millisecond of CPU holds, the fastest of several
// tries (a try that was preempted reads slow).
func calibrate() int {
	best := time.Duration(1 << 62)
	const rounds = 200000
	for try := 0; try < 20; try++ {
		start := time.Now()
		spin(rounds)
		if took := time.Since(start); took < best {
			best = took
		}
	}
	if best <= 0 {
		best = time.Microsecond
	}
	return int(float64(rounds) * float64(time.Millisecond) / float64(best))
}
