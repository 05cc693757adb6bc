package main

import (
	"strings"
	"testing"
	"time"
)

// env looks names up in pairs, as os.Getenv would in an environment holding only them.
func env(pairs map[string]string) func(string) string {
	return func(name string) string { return pairs[name] }
}

func TestDefaultsAreTheContracts(t *testing.T) {
	s, err := loadSettings(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := settings{Host: "127.0.0.1", Port: 8080, DBPool: 60, DBTimeout: 5 * time.Second}
	if s != want {
		t.Fatalf("defaults %+v, want %+v", s, want)
	}
}

func TestSettingsAreRead(t *testing.T) {
	s, err := loadSettings(env(map[string]string{
		"HOST": "0.0.0.0", "PORT": "0", "DB_POOL": "20", "DB_TIMEOUT_MS": "1000",
		"DATABASE_URL": "postgres://u:p@127.0.0.1:5432/db", "UPSTREAM_URL": "http://127.0.0.1:9/x",
		"SECRET": "s", "GOROUTINE": "1",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if s.Host != "0.0.0.0" || s.Port != 0 || s.DBPool != 20 || s.DBTimeout != time.Second || !s.Goroutine {
		t.Fatalf("read %+v", s)
	}
}

func TestBadSettingsNameTheVariable(t *testing.T) {
	for _, c := range []struct{ name, value string }{
		{"PORT", "eighty"},
		{"PORT", "70000"},
		{"PORT", "-1"},
		{"DB_POOL", "0"},
		{"DB_TIMEOUT_MS", "1.5"},
		{"DATABASE_URL", "mysql://x"},
		{"DATABASE_URL", "postgres://"},
		{"UPSTREAM_URL", "https://example.com"},
		{"HOST", "localhost"},
		{"GOROUTINE", "yes"},
	} {
		_, err := loadSettings(env(map[string]string{c.name: c.value}))
		if err == nil || !strings.Contains(err.Error(), "fix "+c.name) {
			t.Errorf("%s=%q: %v", c.name, c.value, err)
		}
	}
}

func TestDatabaseErrorsHideThePassword(t *testing.T) {
	_, err := loadSettings(env(map[string]string{"DATABASE_URL": "postgres://u:hunter2@h:notaport/db"}))
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("%v", err)
	}
}
