package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"

	"github.com/agentctx/agentctx/internal/app/config"
)

// TestPrecedence: flag > environment > file (command section > top level)
// > default, for every combination of the four.
func TestPrecedence(t *testing.T) {
	file := func(t *testing.T, s string) *config.File {
		f, err := config.Parse("c.json", []byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	for _, tc := range []struct {
		name       string
		args       []string
		env        map[string]string
		file       string
		want       string
		wantSource config.Source
	}{
		{"default", nil, nil, `{}`, "200", config.SourceDefault},
		{"file top", nil, nil, `{"limit": 300}`, "300", config.SourceFile},
		{"file section wins over top", nil, nil, `{"limit": 300, "proxy": {"limit": 400}}`, "400", config.SourceFile},
		{"other section ignored", nil, nil, `{"limit": 300, "count": {"limit": 500}}`, "300", config.SourceFile},
		{"env over file", nil, map[string]string{"AGENTCTX_LIMIT": "600"}, `{"proxy": {"limit": 400}}`, "600", config.SourceEnv},
		{"empty env is unset", nil, map[string]string{"AGENTCTX_LIMIT": ""}, `{"limit": 300}`, "300", config.SourceFile},
		{"flag over env", []string{"--limit", "700"}, map[string]string{"AGENTCTX_LIMIT": "600"}, `{"limit": 300}`, "700", config.SourceFlag},
		{"flag over file", []string{"--limit=700"}, nil, `{"limit": 300}`, "700", config.SourceFlag},
		{"flag equal to default", []string{"--limit=200"}, map[string]string{"AGENTCTX_LIMIT": "600"}, `{}`, "200", config.SourceFlag},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := pflag.NewFlagSet("proxy", pflag.ContinueOnError)
			fs.Int("limit", 200, "")
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			got, err := config.Settle(fs, config.Options{
				Command: []string{"proxy"},
				File:    file(t, tc.file),
				Env: func(f *pflag.Flag) string {
					if f.Name == "limit" {
						return "AGENTCTX_LIMIT"
					}
					return ""
				},
				LookupEnv: func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok },
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].Value != tc.want || got[0].Source != tc.wantSource {
				t.Fatalf("settings = %+v, want limit=%s from %s", got, tc.want, tc.wantSource)
			}
			if v, _ := fs.GetInt("limit"); fs.Lookup("limit").Value.String() != tc.want {
				t.Fatalf("flag holds %d, want %s", v, tc.want)
			}
			if fs.Changed("limit") != (tc.wantSource == config.SourceFlag) {
				t.Fatalf("Changed = %v for a value from %s", fs.Changed("limit"), tc.wantSource)
			}
		})
	}
}

func TestSectionOnlyAndLists(t *testing.T) {
	f, err := config.Parse("c.json", []byte(`{"session": "s1", "ws": {"ls": {"session": "s2"}}, "tags": ["a", "b"]}`))
	if err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	fs.String("session", "", "")
	fs.StringSlice("tags", []string{"z"}, "")
	only := func(*pflag.Flag) bool { return true }
	if _, err := config.Settle(fs, config.Options{Command: []string{"ws", "get"}, File: f, SectionOnly: only}); err != nil {
		t.Fatal(err)
	}
	if v, _ := fs.GetString("session"); v != "" {
		t.Fatalf("a section-only flag took the top level's %q", v)
	}
	if v, _ := fs.GetStringSlice("tags"); len(v) != 1 || v[0] != "z" {
		t.Fatalf("tags = %q, want the default [z] (section-only)", v)
	}
	fs2 := pflag.NewFlagSet("x", pflag.ContinueOnError)
	fs2.String("session", "", "")
	fs2.StringSlice("tags", []string{"z"}, "")
	if _, err := config.Settle(fs2, config.Options{Command: []string{"ws", "ls"}, File: f, SectionOnly: only}); err != nil {
		t.Fatal(err)
	}
	if v, _ := fs2.GetString("session"); v != "s2" {
		t.Fatalf("session = %q, want the section's s2", v)
	}
	fs3 := pflag.NewFlagSet("x", pflag.ContinueOnError)
	fs3.StringSlice("tags", []string{"z"}, "")
	if _, err := config.Settle(fs3, config.Options{File: f}); err != nil {
		t.Fatal(err)
	}
	if v, _ := fs3.GetStringSlice("tags"); len(v) != 2 || v[0] != "a" || v[1] != "b" {
		t.Fatalf("tags = %q, want [a b] (replaced, not appended)", v)
	}
}

func TestBadFiles(t *testing.T) {
	schema := config.Schema{"": {"verbose"}, "proxy": {"listen", "limit"}, "sessions": nil, "sessions prune": {"retain-age"}}
	for name, src := range map[string]string{
		"not json":          `{`,
		"array":             `[]`,
		"two values":        `{} {}`,
		"null":              `{"limit": null}`,
		"unknown key":       `{"bogus": 1}`,
		"unknown command":   `{"nope": {"limit": 1}}`,
		"flag of other cmd": `{"proxy": {"retain-age": "1h"}}`,
		"nested object":     `{"limit": [{"a": 1}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			f, err := config.Parse("c.json", []byte(src))
			if err == nil {
				err = f.Check(schema)
			}
			var ce *config.Error
			if !errors.Is(err, config.ErrInvalid) || !errors.As(err, &ce) || ce.Path != "c.json" {
				t.Fatalf("err = %v, want a *config.Error for c.json", err)
			}
		})
	}
	for _, ok := range []string{``, `{}`, `{"limit": 5, "sessions": {"prune": {"retain-age": "1h"}}}`, `{"sessions": {"retain-age": "1h"}}`} {
		f, err := config.Parse("c.json", []byte(ok))
		if err == nil {
			err = f.Check(schema)
		}
		if err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	fs.Int("limit", 1, "")
	f, _ := config.Parse("c.json", []byte(`{"limit": "lots"}`))
	if _, err := config.Settle(fs, config.Options{File: f}); !errors.Is(err, config.ErrInvalid) {
		t.Fatalf("bad value: err = %v", err)
	}
	if _, err := config.Settle(fs, config.Options{
		Env:       func(*pflag.Flag) string { return "AGENTCTX_LIMIT" },
		LookupEnv: func(string) (string, bool) { return "many", true },
	}); !errors.Is(err, config.ErrInvalid) {
		t.Fatalf("bad env value: err = %v", err)
	}
}

func TestPathAndLoad(t *testing.T) {
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	for _, tc := range []struct {
		flag     string
		env      map[string]string
		want     string
		explicit bool
	}{
		{"/f.json", map[string]string{config.EnvConfig: "/e.json"}, "/f.json", true},
		{"", map[string]string{config.EnvConfig: "/e.json", "XDG_CONFIG_HOME": "/x"}, "/e.json", true},
		{"", map[string]string{"XDG_CONFIG_HOME": "/x", "HOME": "/h"}, "/x/agentctx/config.json", false},
		{"", map[string]string{"XDG_CONFIG_HOME": "rel", "HOME": "/h"}, "/h/.config/agentctx/config.json", false},
		{"", nil, "", false},
	} {
		got, explicit := config.Path(tc.flag, env(tc.env))
		if got != tc.want || explicit != tc.explicit {
			t.Errorf("Path(%q, %v) = %q, %v; want %q, %v", tc.flag, tc.env, got, explicit, tc.want, tc.explicit)
		}
	}
	dir := t.TempDir()
	missing := filepath.Join(dir, "none.json")
	if f, err := config.Load(missing, false); err != nil || f == nil {
		t.Fatalf("absent default file: %v", err)
	}
	if _, err := config.Load(missing, true); !errors.Is(err, config.ErrInvalid) {
		t.Fatalf("absent explicit file: err = %v", err)
	}
	p := filepath.Join(dir, "c.json")
	os.WriteFile(p, []byte(`{"limit": 5}`), 0o600)
	f, err := config.Load(p, true)
	if err != nil {
		t.Fatal(err)
	}
	if v, key, ok := f.Lookup(nil, "limit", false); !ok || v[0] != "5" || key != "limit" {
		t.Fatalf("Lookup = %v %q %v", v, key, ok)
	}
}

func TestMask(t *testing.T) {
	for _, tc := range [][3]string{
		{"store", "postgres://u:pw@h/db", "postgres://u:xxxxx@h/db"},
		{"api-key", "sk-123456789", "xxxxx"},
		{"token", "abc", "xxxxx"},
		{"workspace", "/data/ws", "/data/ws"},
		{"token", "", ""},
		{"input-tokens", "100000", "100000"}, // a count of tokens, not a token
		{"max-tokens", "2000", "2000"},
		{"mcp-token", "abc", "xxxxx"},
		{"keep-recent", "5", "5"},
	} {
		if got := config.Mask(tc[0], tc[1]); got != tc[2] {
			t.Errorf("Mask(%q, %q) = %q, want %q", tc[0], tc[1], got, tc[2])
		}
	}
}

// No input makes Parse, Check or Settle panic; an error is always a
// *config.Error matching ErrInvalid.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{}`, `{"limit": 5, "proxy": {"listen": ":1"}}`, `{"tags": ["a", 1, true]}`, `[`, `{"a": {"b": {"c": null}}}`, ``} {
		f.Add([]byte(s))
	}
	schema := config.Schema{"": {"verbose"}, "proxy": {"listen", "limit", "tags"}}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := config.Parse("f.json", data)
		if err != nil {
			if !errors.Is(err, config.ErrInvalid) {
				t.Fatalf("error %v does not match ErrInvalid", err)
			}
			return
		}
		if err := file.Check(schema); err != nil && !errors.Is(err, config.ErrInvalid) {
			t.Fatalf("Check error %v does not match ErrInvalid", err)
		}
		fs := pflag.NewFlagSet("proxy", pflag.ContinueOnError)
		fs.Int("limit", 1, "")
		fs.String("listen", "", "")
		fs.StringSlice("tags", nil, "")
		if _, err := config.Settle(fs, config.Options{Command: []string{"proxy"}, File: file}); err != nil && !errors.Is(err, config.ErrInvalid) {
			t.Fatalf("Settle error %v does not match ErrInvalid", err)
		}
	})
}
