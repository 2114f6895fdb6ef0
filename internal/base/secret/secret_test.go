package secret

import (
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:s3cret@db:5432/x?sslmode=disable":              "postgres://u:xxxxx@db:5432/x?sslmode=disable",
		"postgres://db/x?password=s3cret&sslmode=disable":            "postgres://db/x?password=xxxxx&sslmode=disable",
		"postgres://u@db/x?sslpassword=s3cret":                       "postgres://u@db/x?sslpassword=xxxxx",
		"host=db port=5432 user=u password=s3cret dbname=x":          "host=db port=5432 user=u password=xxxxx dbname=x",
		"host=db options=-csearch_path=s3cret password='s3cret' x=1": "host=db password=xxxxx",
	} {
		got := URL(in)
		if got != want || strings.Contains(got, "s3cret") {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestScrub(t *testing.T) {
	got := Scrub(`{"error":"invalid x-api-key sk-ant-api03-abcdef123456 (Bearer tok-987654321)"}`, "sk-ant-api03-abcdef123456", "Bearer tok-987654321", "", "ab")
	if strings.Contains(got, "abcdef123456") || strings.Contains(got, "987654321") || !strings.Contains(got, "xxxxx") {
		t.Fatalf("Scrub left a secret: %s", got)
	}
}
