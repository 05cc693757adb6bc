// The Go contestant of ../CONTRACT.md: net/http's ServeMux and pgx's pgxpool, as a Go team
// would write it for production.
//
//   - main.go: the settings, the listener and its ready line, the shutdown on SIGTERM or SIGINT.
//   - settings.go: the environment, checked once at start.
//   - handlers.go: one method per endpoint, and the routes; reply.go: JSON answers and errors;
//     input.go: the checks on bodies and query parameters.
//   - db.go: the pool and its statements, each bounded by DB_TIMEOUT_MS.
//   - compute.go: calibrated CPU work; encrypt.go: AES-256-CBC.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// drain is how long the requests in flight get after SIGTERM.
const drain = 10 * time.Second

func main() {
	os.Exit(run())
}

// run serves until SIGTERM or SIGINT and returns the exit code: 0 after a clean stop, 2 for a
// setting that cannot be used, 1 when the target cannot serve.
func run() int {
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, nil)))

	s, err := loadSettings(os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		return 2
	}

	// Signals are caught before the ready line, so that a SIGTERM right after it is a clean stop.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	address := net.JoinHostPort(s.Host, strconv.Itoa(s.Port))
	listener, err := net.Listen("tcp", address)
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: cannot listen on %s: %v (change PORT or HOST)\n", address, err)
		return 1
	}

	roundsPerMs := calibrate()
	slog.Info("compute: calibrated", "sha256_rounds_per_ms_of_cpu", roundsPerMs)

	a, err := newApp(s, roundsPerMs)
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: cannot set up the database pool: %v (fix DATABASE_URL)\n", err)
		return 2
	}
	defer a.close()

	server := &http.Server{
		Handler:           a.routes(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(slog.Default().Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- server.Serve(listener) }()

	port := listener.Addr().(*net.TCPAddr).Port
	fmt.Printf("listening pid=%d port=%d stack=go workers=1\n", os.Getpid(), port)

	select {
	case err := <-served:
		fmt.Fprintf(os.Stderr, "Error: serving: %v\n", err)
		return 1
	case <-ctx.Done():
	}
	stop() // a second signal now ends the process at once

	// Shutdown closes the listener and the idle keep-alive connections, then waits for the
	// requests in flight; a connection that is busy is closed once its answer is sent.
	slog.Info("stopping: finishing the requests in flight")
	shutdown, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	if err := server.Shutdown(shutdown); err != nil {
		slog.Warn("stopping: requests still in flight, closing them", "after", drain, "err", err)
		_ = server.Close()
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		slog.Warn("stopping", "err", err)
	}
	slog.Info("stopped")
	return 0
}
