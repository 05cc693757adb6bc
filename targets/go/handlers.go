package main

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"time"
)

// upstreamTimeout is the longest /proxy waits for the upstream's whole answer.
const upstreamTimeout = 10 * time.Second

// app is what every request shares.
type app struct {
	settings    settings
	roundsPerMs int64
	db          *database // nil without DATABASE_URL
	key         *[32]byte // nil without SECRET
	upstream    *http.Client
}

func newApp(s settings, roundsPerMs int64) (*app, error) {
	a := &app{settings: s, roundsPerMs: roundsPerMs, upstream: newUpstreamClient()}
	if s.DatabaseURL != "" {
		db, err := openDatabase(s.DatabaseURL, s.DBPool, s.DBTimeout)
		if err != nil {
			return nil, err
		}
		a.db = db
	}
	if s.Secret != "" {
		key := encryptionKey(s.Secret)
		a.key = &key
	}
	return a, nil
}

// newUpstreamClient is /proxy's client: one keep-alive pool shared by every request, deep
// enough that connections are reused under concurrency (net/http keeps 2 idle per host by
// default), no proxy from the environment, no redirects followed (a 3xx is not a 2xx).
func newUpstreamClient() *http.Client {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.Proxy = nil
	transport.MaxIdleConns = 1024
	transport.MaxIdleConnsPerHost = 1024
	return &http.Client{
		Transport: transport,
		Timeout:   upstreamTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

func (a *app) close() {
	if a.db != nil {
		a.db.close()
	}
	a.upstream.CloseIdleConnections()
}

// routes are the endpoints of ../CONTRACT.md.
func (a *app) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /users", handlerFunc(a.createUser))
	mux.Handle("POST /user", handlerFunc(a.createUser))
	mux.Handle("GET /now", handlerFunc(a.now))
	mux.Handle("GET /delay", handlerFunc(a.delay))
	mux.Handle("GET /compute", handlerFunc(a.compute))
	mux.Handle("POST /encrypt", handlerFunc(a.encrypt))
	mux.Handle("GET /proxy", handlerFunc(a.proxy))
	mux.Handle("GET /healthz", handlerFunc(a.health))
	return jsonMuxErrors(mux)
}

type idReply struct {
	ID int64 `json:"id"`
}

func (a *app) createUser(w http.ResponseWriter, r *http.Request) error {
	object, err := readObject(w, r)
	if err != nil {
		return err
	}
	email, err := textField(object, "email")
	if err != nil {
		return err
	}
	password, err := textField(object, "password")
	if err != nil {
		return err
	}
	if a.db == nil {
		return fail(http.StatusServiceUnavailable, "no database configured (set DATABASE_URL)")
	}
	id, err := a.db.insertUser(r.Context(), email, password)
	if err != nil {
		return fail(http.StatusServiceUnavailable, "%v", err)
	}
	w.Header().Set("Location", "/users/"+strconv.FormatInt(id, 10))
	writeJSON(w, http.StatusCreated, idReply{ID: id})
	return nil
}

func (a *app) now(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, now())
	return nil
}

func (a *app) delay(w http.ResponseWriter, r *http.Request) error {
	ms, err := msParameter(r.URL.Query(), "ms", 60_000, true)
	if err != nil {
		return err
	}
	if err := sleep(r.Context(), ms); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, now())
	return nil
}

func (a *app) compute(w http.ResponseWriter, r *http.Request) error {
	query := r.URL.Query()
	ms, err := msParameter(query, "ms", 10_000, true)
	if err != nil {
		return err
	}
	delayMs, err := msParameter(query, "delay_ms", 60_000, false)
	if err != nil {
		return err
	}
	if err := sleep(r.Context(), delayMs); err != nil {
		return err
	}
	spend(time.Duration(ms)*time.Millisecond, a.roundsPerMs)
	writeJSON(w, http.StatusOK, now())
	return nil
}

// sleep waits ms milliseconds on a timer (no thread held), or until the client goes away.
func sleep(ctx context.Context, ms uint64) error {
	if ms == 0 {
		return nil
	}
	timer := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type encryptReply struct {
	UserID   string `json:"userId"`
	Password string `json:"password"`
}

func (a *app) encrypt(w http.ResponseWriter, r *http.Request) error {
	object, err := readObject(w, r)
	if err != nil {
		return err
	}
	userID, err := textField(object, "userId")
	if err != nil {
		return err
	}
	password, err := textField(object, "password")
	if err != nil {
		return err
	}
	if a.key == nil {
		return fail(http.StatusServiceUnavailable, "no key configured (set SECRET)")
	}

	var reply encryptReply
	if a.settings.Goroutine {
		// The write-up's "Go with goroutine": the work on a goroutine of its own, waited for.
		type result struct {
			reply encryptReply
			err   error
		}
		done := make(chan result, 1)
		go func() {
			reply, err := a.encryptPair(userID, password)
			done <- result{reply, err}
		}()
		res := <-done
		reply, err = res.reply, res.err
	} else {
		reply, err = a.encryptPair(userID, password)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, reply)
	return nil
}

func (a *app) encryptPair(userID, password string) (encryptReply, error) {
	u, err := encrypt(a.key, userID)
	if err != nil {
		return encryptReply{}, err
	}
	p, err := encrypt(a.key, password)
	if err != nil {
		return encryptReply{}, err
	}
	return encryptReply{UserID: u, Password: p}, nil
}

func (a *app) proxy(w http.ResponseWriter, r *http.Request) error {
	if a.settings.UpstreamURL == "" {
		return fail(http.StatusServiceUnavailable, "no upstream configured (set UPSTREAM_URL)")
	}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, a.settings.UpstreamURL, nil)
	if err != nil {
		return fail(http.StatusBadGateway, "upstream: %v", err)
	}
	resp, err := a.upstream.Do(req)
	if err != nil {
		return fail(http.StatusBadGateway, "upstream: %v", err)
	}
	defer resp.Body.Close()
	// Read to the end even when the status is refused, so that the connection is reused.
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fail(http.StatusBadGateway, "upstream: %v", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fail(http.StatusBadGateway, "upstream: answered %d", resp.StatusCode)
	}
	contentType := resp.Header.Get("Content-Type")
	if contentType == "" {
		contentType = "application/octet-stream"
	}
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	return nil
}

type statusReply struct {
	Status string `json:"status"`
}

func (a *app) health(w http.ResponseWriter, r *http.Request) error {
	if a.db != nil {
		if err := a.db.ping(r.Context()); err != nil {
			return fail(http.StatusServiceUnavailable, "%v", err)
		}
	}
	writeJSON(w, http.StatusOK, statusReply{Status: "ok"})
	return nil
}
