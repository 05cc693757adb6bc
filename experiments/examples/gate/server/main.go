// A small server to gate: GET /work spends WORK of CPU (100µs when unset) and answers its
// count. A build that spends more is the slower build a gate must flag.
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
	work := 100 * time.Microsecond
	if text := os.Getenv("WORK"); text != "" {
		parsed, err := time.ParseDuration(text)
		if err != nil || parsed < 0 {
			log.Fatalf("WORK=%q is not a duration such as 100us", text)
		}
		work = parsed
	}
	var served atomic.Uint64
	http.HandleFunc("/work", func(w http.ResponseWriter, _ *http.Request) {
		spin(work)
		w.Header().Set("Content-Type", "text/plain")
		_, _ = fmt.Fprintln(w, strconv.FormatUint(served.Add(1), 10))
	})
	http.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})
	log.Fatal(http.ListenAndServe(fmt.Sprintf("127.0.0.1:%d", *port), nil))
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
