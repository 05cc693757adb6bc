package main

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"unicode/utf8"
)

// Input is checked before any other work: a bad body or parameter is 400 even when the
// database is down or SECRET unset.

const (
	// maxBody is the largest request body; a larger one is 413.
	maxBody = 64 << 10
	// maxText is the most characters (code points, as varchar(255) counts) of a text field.
	maxText = 255
)

// readObject reads the body, at most maxBody bytes, as a JSON object. Its values stay raw
// until a field is asked for; keys match exactly (encoding/json's struct fields would also
// take "EMAIL" for "email").
func readObject(w http.ResponseWriter, r *http.Request) (map[string]json.RawMessage, error) {
	if r.ContentLength > maxBody {
		return nil, fail(http.StatusRequestEntityTooLarge, "body over %d bytes", maxBody)
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, fail(http.StatusRequestEntityTooLarge, "body over %d bytes", maxBody)
		}
		return nil, fail(http.StatusBadRequest, "cannot read the body: %v", err)
	}
	return parseObject(data)
}

// parseObject parses data as a JSON object.
func parseObject(data []byte) (map[string]json.RawMessage, error) {
	var object map[string]json.RawMessage
	if err := json.Unmarshal(data, &object); err != nil {
		var notObject *json.UnmarshalTypeError
		if errors.As(err, &notObject) {
			return nil, fail(http.StatusBadRequest, "the body must be a JSON object")
		}
		return nil, fail(http.StatusBadRequest, "the body is not JSON: %v", err)
	}
	if object == nil { // the body was null
		return nil, fail(http.StatusBadRequest, "the body must be a JSON object")
	}
	return object, nil
}

// textField is the object's field name: a string of 1 to maxText characters.
func textField(object map[string]json.RawMessage, name string) (string, error) {
	raw, ok := object[name]
	if !ok || string(raw) == "null" {
		return "", fail(http.StatusBadRequest, "%s is missing", name)
	}
	var text string
	if err := json.Unmarshal(raw, &text); err != nil {
		return "", fail(http.StatusBadRequest, "%s must be a string", name)
	}
	switch {
	case text == "":
		return "", fail(http.StatusBadRequest, "%s is empty", name)
	case len(text) > maxText && utf8.RuneCountInString(text) > maxText:
		return "", fail(http.StatusBadRequest, "%s is over %d characters", name, maxText)
	}
	return text, nil
}

// msParameter is the query parameter name, an integer in 0..=limit; when it is absent, 0 if it
// is optional, else an error.
func msParameter(query url.Values, name string, limit uint64, required bool) (uint64, error) {
	if !query.Has(name) {
		if !required {
			return 0, nil
		}
		return 0, fail(http.StatusBadRequest, "%s is missing: ask for ?%s=N with N in 0..=%d", name, name, limit)
	}
	// ParseUint takes decimal digits only: no sign, no spaces, no fraction.
	n, err := strconv.ParseUint(query.Get(name), 10, 64)
	if err != nil || n > limit {
		return 0, fail(http.StatusBadRequest, "%s must be an integer in 0..=%d", name, limit)
	}
	return n, nil
}
