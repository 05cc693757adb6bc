package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// serve answers one request from an app with no database, upstream or secret.
func serve(t *testing.T, method, target, body string) *httptest.ResponseRecorder {
	t.Helper()
	a, err := newApp(settings{Host: "127.0.0.1", DBPool: 1, DBTimeout: time.Second}, 1)
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	a.routes().ServeHTTP(w, httptest.NewRequest(method, target, strings.NewReader(body)))
	return w
}

// jsonAnswer checks the status and the headers of a JSON answer and returns its body.
func jsonAnswer(t *testing.T, w *httptest.ResponseRecorder, want int) map[string]any {
	t.Helper()
	if w.Code != want {
		t.Fatalf("status %d, want %d: %s", w.Code, want, w.Body)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	if cl := w.Header().Get("Content-Length"); cl != strconv.Itoa(w.Body.Len()) {
		t.Fatalf("Content-Length %q for %d bytes", cl, w.Body.Len())
	}
	var body map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatalf("%s: %v", w.Body, err)
	}
	return body
}

func TestUnknownPathsAndMethodsAreJSONErrors(t *testing.T) {
	body := jsonAnswer(t, serve(t, "GET", "/no/such/path", ""), http.StatusNotFound)
	if body["error"] == nil {
		t.Fatalf("no error in %v", body)
	}
	w := serve(t, "GET", "/users", "")
	jsonAnswer(t, w, http.StatusMethodNotAllowed)
	if allow := w.Header().Get("Allow"); allow != "POST" {
		t.Fatalf("Allow %q", allow)
	}
	w = serve(t, "DELETE", "/now", "")
	jsonAnswer(t, w, http.StatusMethodNotAllowed)
	if allow := w.Header().Get("Allow"); !strings.Contains(allow, "GET") {
		t.Fatalf("Allow %q", allow)
	}
}

func TestNowIsUTCWithMilliseconds(t *testing.T) {
	body := jsonAnswer(t, serve(t, "GET", "/now", ""), http.StatusOK)
	now, _ := body["now"].(string)
	if _, err := time.Parse(time.RFC3339, now); err != nil || len(now) != 24 || now[19] != '.' || now[23] != 'Z' {
		t.Fatalf("now %q", now)
	}
}

func TestInputIsCheckedBeforeTheMissingSettings(t *testing.T) {
	jsonAnswer(t, serve(t, "POST", "/users", `{"email":"a"}`), http.StatusBadRequest)
	jsonAnswer(t, serve(t, "POST", "/users", `{"email":"a","password":"p"}`), http.StatusServiceUnavailable)
	jsonAnswer(t, serve(t, "POST", "/encrypt", `{"userId":"u"}`), http.StatusBadRequest)
	jsonAnswer(t, serve(t, "POST", "/encrypt", `{"userId":"u","password":"p"}`), http.StatusServiceUnavailable)
	jsonAnswer(t, serve(t, "GET", "/proxy", ""), http.StatusServiceUnavailable)
	jsonAnswer(t, serve(t, "GET", "/compute?ms=1&delay_ms=-5", ""), http.StatusBadRequest)
	big := `{"email":"` + strings.Repeat("x", 70<<10) + `","password":"p"}`
	jsonAnswer(t, serve(t, "POST", "/users", big), http.StatusRequestEntityTooLarge)
	jsonAnswer(t, serve(t, "GET", "/healthz", ""), http.StatusOK)
}
