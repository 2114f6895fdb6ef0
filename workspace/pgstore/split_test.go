package pgstore

import (
	"fmt"
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	cases := []struct {
		content    string
		size       int
		want       string // start-end:line0-line1[+cont][b] per chunk
		searchable bool
	}{
		{"", 8, "", true},
		{"a\nb\n", 8, "0-4:1-2", true},
		{"aaa\nbbb\nccc\n", 8, "0-8:1-2 8-12:3-3", true},
		{"aaa\nbbb\ncc", 8, "0-8:1-2 8-10:3-3", true},
		{"aaaaaaaaaaaa\nb", 8, "0-8:1-1 8-14:1-2+", false},
		{"ééééé\n", 8, "0-8:1-1 8-11:1-1+", false}, // cut at a character boundary
		{"a\x00b\nc\n", 8, "0-6:1-2b", false},
		{"\xff\n", 8, "0-2:1-1b", false},
	}
	for _, c := range cases {
		chunks, searchable := split(c.content, c.size, true)
		var got []string
		for _, ch := range chunks {
			s := fmt.Sprintf("%d-%d:%d-%d", ch.start, ch.end, ch.line0, ch.line1)
			if ch.cont {
				s += "+"
			}
			if !ch.text {
				s += "b"
			}
			got = append(got, s)
		}
		if g := strings.Join(got, " "); g != c.want || searchable != c.searchable {
			t.Errorf("split(%q, %d) = %s searchable %v, want %s %v", c.content, c.size, g, searchable, c.want, c.searchable)
		}
	}
	if chunks, searchable := split("plain\n", 8, false); searchable || chunks[0].text {
		t.Errorf("a server that does not keep UTF-8 gets text chunks: %+v", chunks)
	}
}

func TestRedact(t *testing.T) {
	cases := map[string]string{
		"postgres://agentctx:s3cret@db:5432/ws?sslmode=disable":     "postgres://agentctx:xxxxx@db:5432/ws?sslmode=disable",
		"host=db port=5432 user=agentctx password=s3cret dbname=ws": "host=db port=5432 user=agentctx password=xxxxx dbname=ws",
		"postgres://db/ws": "postgres://db/ws",
	}
	for in, want := range cases {
		if got := redact(in); got != want || strings.Contains(got, "s3cret") {
			t.Errorf("redact(%q) = %q, want %q", in, got, want)
		}
	}
}
