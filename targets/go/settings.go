package main

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// settings are the environment of ../CONTRACT.md, checked once at start.
type settings struct {
	Host        string // an IP address
	Port        int    // 0 takes any free port
	DatabaseURL string // "" when unset: the endpoints that need it answer 503
	DBPool      int32
	DBTimeout   time.Duration
	UpstreamURL string // "" when unset
	Secret      string // "" when unset
	Goroutine   bool   // run /encrypt's work on a goroutine of its own
}

// loadSettings reads the settings through getenv (os.Getenv, or a map in tests). An empty
// value is the same as an unset one. The error names the variable and says how to fix it.
func loadSettings(getenv func(string) string) (settings, error) {
	s := settings{
		Host:        "127.0.0.1",
		DatabaseURL: getenv("DATABASE_URL"),
		UpstreamURL: getenv("UPSTREAM_URL"),
		Secret:      getenv("SECRET"),
	}

	if host := getenv("HOST"); host != "" {
		if net.ParseIP(host) == nil {
			return s, fmt.Errorf("HOST=%q is not an IP address: fix HOST", host)
		}
		s.Host = host
	}

	port, err := integer(getenv, "PORT", 8080, 0, 65535)
	if err != nil {
		return s, err
	}
	s.Port = int(port)

	pool, err := integer(getenv, "DB_POOL", 60, 1, 10_000)
	if err != nil {
		return s, err
	}
	s.DBPool = int32(pool)

	timeout, err := integer(getenv, "DB_TIMEOUT_MS", 5000, 1, 600_000)
	if err != nil {
		return s, err
	}
	s.DBTimeout = time.Duration(timeout) * time.Millisecond

	if s.DatabaseURL != "" {
		if err := checkDatabaseURL(s.DatabaseURL); err != nil {
			return s, err
		}
	}

	if s.UpstreamURL != "" {
		u, err := url.Parse(s.UpstreamURL)
		if err != nil || u.Scheme != "http" || u.Host == "" {
			return s, fmt.Errorf("UPSTREAM_URL=%q must be an http:// URL with a host: fix UPSTREAM_URL", s.UpstreamURL)
		}
	}

	if text := getenv("GOROUTINE"); text != "" {
		on, err := strconv.ParseBool(text)
		if err != nil {
			return s, fmt.Errorf("GOROUTINE=%q is neither 1 nor 0: fix GOROUTINE (or unset it)", text)
		}
		s.Goroutine = on
	}
	return s, nil
}

// integer reads an integer setting in lo..=hi, fallback when unset.
func integer(getenv func(string) string, name string, fallback, lo, hi uint64) (uint64, error) {
	text := getenv(name)
	if text == "" {
		return fallback, nil
	}
	n, err := strconv.ParseUint(strings.TrimSpace(text), 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%s=%q is not an integer in %d..=%d: fix %s", name, text, lo, hi, name)
	}
	return n, nil
}

// checkDatabaseURL accepts postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE (or postgresql://)
// that pgx can use. The message never repeats the URL: it may hold a password.
func checkDatabaseURL(raw string) error {
	const want = "DATABASE_URL is not a PostgreSQL URL (postgres://USER@HOST:PORT/DATABASE): fix DATABASE_URL"
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
		return errors.New(want)
	}
	if _, err := pgxpool.ParseConfig(raw); err != nil {
		return fmt.Errorf("%s: %v", want, err)
	}
	return nil
}
