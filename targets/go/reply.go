package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"
)

// The responses of the contract: JSON with a Content-Length (the body is marshalled before
// anything is written, so it is never chunked); net/http adds the Date header.

// httpError is an answer other than 2xx: its status and the message of its {"error": "..."}.
type httpError struct {
	status  int
	message string
}

func (e *httpError) Error() string { return e.message }

// fail makes an httpError.
func fail(status int, format string, args ...any) error {
	return &httpError{status: status, message: fmt.Sprintf(format, args...)}
}

type errorReply struct {
	Error string `json:"error"`
}

type nowReply struct {
	Now string `json:"now"`
}

// now is the body of /now: UTC, RFC 3339 with milliseconds.
func now() nowReply {
	return nowReply{Now: time.Now().UTC().Format("2006-01-02T15:04:05.000Z")}
}

// writeJSON sends value as the whole body.
func writeJSON(w http.ResponseWriter, status int, value any) {
	body, err := json.Marshal(value)
	if err != nil {
		slog.Error("cannot encode a response", "err", err)
		status, body = http.StatusInternalServerError, []byte(`{"error":"cannot encode the response"}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeError sends {"error": message}.
func writeError(w http.ResponseWriter, status int, message string) {
	writeJSON(w, status, errorReply{Error: message})
}

// handlerFunc is an endpoint that returns its failure instead of writing it.
type handlerFunc func(http.ResponseWriter, *http.Request) error

// ServeHTTP writes an httpError as its JSON answer; anything else is a 500, logged. A request
// whose client has gone gets no answer.
func (h handlerFunc) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	err := h(w, r)
	if err == nil {
		return
	}
	var he *httpError
	if errors.As(err, &he) {
		writeError(w, he.status, he.message)
		return
	}
	if r.Context().Err() != nil {
		return
	}
	slog.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	writeError(w, http.StatusInternalServerError, "internal error")
}

// jsonMuxErrors answers what the mux itself refuses (a path with no pattern: 404; a path whose
// patterns are for other methods: 405 with the mux's Allow header) with the JSON error body of
// every other answer, where the mux would send text/plain.
func jsonMuxErrors(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		refusal, pattern := mux.Handler(r)
		if pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		// Let the mux say what it would answer (its status and Allow), then answer it in JSON.
		rec := &headerRecorder{header: http.Header{}}
		refusal.ServeHTTP(rec, r)
		switch rec.status {
		case http.StatusMethodNotAllowed:
			allow := rec.header.Get("Allow")
			w.Header().Set("Allow", allow)
			writeError(w, rec.status, "method not allowed: use "+allow)
		case 0, http.StatusNotFound:
			writeError(w, http.StatusNotFound, "not found")
		default:
			writeError(w, rec.status, http.StatusText(rec.status))
		}
	})
}

// headerRecorder keeps the status and headers a handler writes, and drops its body.
type headerRecorder struct {
	header http.Header
	status int
}

func (h *headerRecorder) Header() http.Header { return h.header }

func (h *headerRecorder) Write(b []byte) (int, error) {
	if h.status == 0 {
		h.status = http.StatusOK
	}
	return len(b), nil
}

func (h *headerRecorder) WriteHeader(status int) {
	if h.status == 0 {
		h.status = status
	}
}
