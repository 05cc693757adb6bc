// A small server to gate: GET /work spends WORK of CPU (100µs when unset) in spin, then AUDIT
// (none when unset) in audit, and answers its count. A build that spends more is the slower
// build a gate must flag; one with an AUDIT is a build that added a function doing measured
// work, which the gate of profiled runs must name.
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"
)

func main() {
	port := flag.Int("port", 8080, "the port to listen on")
	flag.Parse()
	work := duration("WORK", 100*time.Microsecond)
	audited := duration("AUDIT", 0)
	var served atomic.Uint64
	http.HandleFunc("/work", func(w http.ResponseWriter, _ *http.Request) {
		spin(work)
		if audited > 0 {
			audit(audited)
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = fmt.Fprintln(w, strconv.FormatUint(served.Add(1), 10))
	})
	http.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})
	log.Fatal(http.ListenAndServe(fmt.Sprintf("127.0.0.1:%d", *port), nil))
}

// duration reads the environment variable name as a duration, def when unset.
func duration(name string, def time.Duration) time.Duration {
	text := os.Getenv(name)
	if text == "" {
		return def
	}
	parsed, err := time.ParseDuration(text)
	if err != nil || parsed < 0 {
		log.Fatalf("%s=%q is not a duration such as 100us", name, text)
	}
	return parsed
}

// audit keeps the CPU busy for d in a function of its own: the work a candidate added.
//
//go:noinline
func audit(d time.Duration) {
	start := time.Now()
	x := uint64(7)
	for time.Since(start) < d {
		// The clock read once in 4,096 turns: nearly all of audit's CPU is its own.
		for i := 0; i < 4096; i++ {
			x = x*2862933555777941757 + 3037000493
		}
	}
	sink.Store(x)
}

// spin keeps the CPU busy for d: the request's work.
func spin(d time.Duration) {
	start := time.Now()
	x := uint64(1)
	for time.Since(start) < d {
		for i := 0; i < 64; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	sink.Store(x)
}

var sink atomic.Uint64
