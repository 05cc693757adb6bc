package main

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

func status(err error) int {
	var he *httpError
	if errors.As(err, &he) {
		return he.status
	}
	return 0
}

func TestBodiesAreCheckedStrictly(t *testing.T) {
	long := strings.Repeat("x", 256)
	for _, c := range []struct {
		body string
		want int // 0: accepted
	}{
		{`{"email":"a@b.c","password":"p"}`, 0},
		{`{"email":"a@b.c","password":"p","other":[1]}`, 0},
		{`{"email":"` + strings.Repeat("é", 255) + `","password":"p"}`, 0},
		{`not json`, 400},
		{`{"email":"a@b.c","password":"p"`, 400},
		{`[1,2]`, 400},
		{`"text"`, 400},
		{`null`, 400},
		{`{}`, 400},
		{`{"email":"a@b.c"}`, 400},
		{`{"EMAIL":"a@b.c","password":"p"}`, 400},
		{`{"email":null,"password":"p"}`, 400},
		{`{"email":1,"password":"p"}`, 400},
		{`{"email":["a"],"password":"p"}`, 400},
		{`{"email":"","password":"p"}`, 400},
		{`{"email":"` + long + `","password":"p"}`, 400},
		{`{"email":"` + strings.Repeat("é", 256) + `","password":"p"}`, 400},
	} {
		err := func() error {
			object, err := parseObject([]byte(c.body))
			if err != nil {
				return err
			}
			if _, err := textField(object, "email"); err != nil {
				return err
			}
			_, err = textField(object, "password")
			return err
		}()
		if got := status(err); got != c.want {
			t.Errorf("%.50s: status %d (%v), want %d", c.body, got, err, c.want)
		}
	}
}

func TestMsParameters(t *testing.T) {
	for _, c := range []struct {
		query    string
		required bool
		want     uint64
		status   int
	}{
		{"ms=100", true, 100, 0},
		{"ms=0", true, 0, 0},
		{"ms=60000", true, 60000, 0},
		{"", false, 0, 0},
		{"", true, 0, 400},
		{"ms=", true, 0, 400},
		{"ms=-1", true, 0, 400},
		{"ms=%2B5", true, 0, 400},
		{"ms=abc", true, 0, 400},
		{"ms=1.5", true, 0, 400},
		{"ms=60001", true, 0, 400},
		{"ms=99999999999999999999999", true, 0, 400},
	} {
		query, _ := url.ParseQuery(c.query)
		got, err := msParameter(query, "ms", 60_000, c.required)
		if got != c.want || status(err) != c.status {
			t.Errorf("?%s: %d, %v; want %d, status %d", c.query, got, err, c.want, c.status)
		}
	}
}
