// Package config reads agentctx's configuration file and settles every
// flag of a command from, in order of precedence: the command line, the
// environment (AGENTCTX_*), the file, the flag's default.
//
// # The file
//
// One JSON object (JSON needs no dependency and is what every other
// agentctx input is). Its keys are flag names, without the dashes; a key
// at the top level applies to every command that has that flag. A key
// that names a command holds an object of that command's own settings,
// which win over the top level; subcommands nest:
//
//	{
//	  "workspace": "/home/me/.agentctx/ws",
//	  "limit": 150000,
//	  "proxy": {"listen": "127.0.0.1:9000", "retain-age": "720h"},
//	  "sessions": {"prune": {"retain-size": "2GiB"}}
//	}
//
// Values are JSON strings, numbers or booleans, read as the flag reads its
// text on the command line; a list (for a flag that takes several values)
// is an array of them. A key that is neither a flag nor a command, and a
// value the flag rejects, are errors (*Error, matching ErrInvalid) naming
// the file and the key.
//
// # Where it is
//
// Path finds it: the --config flag, else $AGENTCTX_CONFIG, else
// $XDG_CONFIG_HOME/agentctx/config.json (by default
// ~/.config/agentctx/config.json). A file named explicitly must exist; the
// default one may be absent. There is no project-local file: a settings
// file found by walking up from the working directory would let any
// checked-out repository point a proxy at another store or upstream.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// EnvConfig is the environment variable naming the configuration file.
const EnvConfig = "AGENTCTX_CONFIG"

// ErrInvalid is matched (errors.Is) by every error about a file's content:
// bad JSON, an unknown key, a value a flag rejects.
var ErrInvalid = errors.New("invalid configuration")

// Error is an error about a configuration file: its path, the key (dotted
// through command sections: "proxy.listen") and the cause.
type Error struct {
	Path string
	Key  string
	Err  error
}

// Error returns "config PATH: key KEY: cause" on one line.
func (e *Error) Error() string {
	s := "config " + e.Path
	if e.Key != "" {
		s += ": key " + strconv.Quote(e.Key)
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns the cause and ErrInvalid.
func (e *Error) Unwrap() []error { return []error{e.Err, ErrInvalid} }

// File is a parsed configuration file. The zero value (and nil) is an
// empty file: no settings.
type File struct {
	// Path is where the file was read from.
	Path string
	root section
}

// section is one level of the file: flag values and command sections.
type section struct {
	values   map[string][]string // flag name → its value(s), as text
	commands map[string]*section
}

// Path returns the configuration file to read and whether it was named
// explicitly (by flag or environment; it must then exist). flag is the
// --config value ("" when not given); lookup reads the environment (nil:
// none). It returns "" when no location can be made out.
func Path(flag string, lookup func(string) (string, bool)) (path string, explicit bool) {
	get := func(k string) string {
		if lookup == nil {
			return ""
		}
		v, _ := lookup(k)
		return v
	}
	if flag != "" {
		return flag, true
	}
	if v := get(EnvConfig); v != "" {
		return v, true
	}
	dir := get("XDG_CONFIG_HOME")
	if dir == "" || !filepath.IsAbs(dir) {
		home := get("HOME")
		if home == "" {
			return "", false
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "agentctx", "config.json"), false
}

// Load reads and parses the file at path. When the file does not exist and
// it was not named explicitly, Load returns an empty File and no error. A
// file named explicitly that does not exist, a directory, or a bad file is
// an *Error (matching ErrInvalid); a file that cannot be read (permission,
// I/O) is not ErrInvalid.
func Load(path string, explicit bool) (*File, error) {
	if path == "" {
		return &File{}, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && !explicit {
		return &File{}, nil
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &Error{Path: path, Err: errors.New("no such file")}
		}
		if errors.Is(err, syscall.EISDIR) {
			return nil, &Error{Path: path, Err: err}
		}
		// The file is there but the system cannot read it (permission,
		// I/O): not a bad configuration, so not ErrInvalid.
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return Parse(path, data)
}

// Parse parses the content of a configuration file; path is for errors.
// An empty or all-blank file is an empty configuration.
func Parse(path string, data []byte) (*File, error) {
	f := &File{Path: path}
	if len(bytes.TrimSpace(data)) == 0 {
		return f, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var top map[string]any
	if err := dec.Decode(&top); err != nil {
		return nil, &Error{Path: path, Err: jsonError(data, err)}
	}
	if top == nil {
		return nil, &Error{Path: path, Err: errors.New("not a JSON object")}
	}
	if rest := bytes.TrimSpace(data[dec.InputOffset():]); len(rest) > 0 {
		// (dec.More misses a stray closing bracket.)
		return nil, &Error{Path: path, Err: fmt.Errorf("not a JSON object: more after its end, at %s", lineCol(data, len(data)-len(rest)))}
	}
	s, err := parseSection(path, "", top)
	if err != nil {
		return nil, err
	}
	f.root = *s
	return f, nil
}

func parseSection(path, prefix string, m map[string]any) (*section, error) {
	s := &section{values: map[string][]string{}, commands: map[string]*section{}}
	for k, v := range m {
		key := prefix + k
		if k == "" {
			return nil, &Error{Path: path, Key: key, Err: errors.New("empty key")}
		}
		switch v := v.(type) {
		case map[string]any:
			sub, err := parseSection(path, key+".", v)
			if err != nil {
				return nil, err
			}
			s.commands[k] = sub
		case []any:
			var list []string
			for _, e := range v {
				t, err := scalar(e)
				if err != nil {
					return nil, &Error{Path: path, Key: key, Err: err}
				}
				list = append(list, t)
			}
			if list == nil {
				list = []string{}
			}
			s.values[k] = list
		default:
			t, err := scalar(v)
			if err != nil {
				return nil, &Error{Path: path, Key: key, Err: err}
			}
			s.values[k] = []string{t}
		}
	}
	return s, nil
}

func scalar(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case json.Number:
		return v.String(), nil
	case bool:
		return strconv.FormatBool(v), nil
	case nil:
		return "", errors.New("null is not a value (leave the key out for the default)")
	}
	return "", errors.New("want a string, number, boolean or a list of them")
}

// Lookup returns the value of a flag for the command at cmdPath (its
// names below the root, e.g. ["sessions", "prune"]), from the most
// specific section that sets it, and the dotted key it came from. With
// sectionOnly, the top level is not looked at (for a flag that means
// something else in that command, such as a filter).
func (f *File) Lookup(cmdPath []string, flag string, sectionOnly bool) (values []string, key string, ok bool) {
	if f == nil {
		return nil, "", false
	}
	s := &f.root
	if v, found := s.values[flag]; found && !sectionOnly {
		values, key, ok = v, flag, true
	}
	for i, name := range cmdPath {
		s = s.commands[name]
		if s == nil {
			break
		}
		if v, found := s.values[flag]; found {
			values, key, ok = v, strings.Join(cmdPath[:i+1], ".")+"."+flag, true
		}
	}
	return values, key, ok
}

// Schema is what a file may hold: for each command, by its path below the
// root joined with spaces ("" for the root, "sessions prune"), the names
// of its flags.
type Schema map[string][]string

// Check reports the first key of the file (in sorted order) that is
// neither a flag of a command that its section applies to nor a command:
// a top-level key must be a flag of some command, a key in a section a
// flag of that command or of one of its subcommands.
func (f *File) Check(schema Schema) error {
	if f == nil {
		return nil
	}
	return f.check(schema, &f.root, nil)
}

func (f *File) check(schema Schema, s *section, path []string) error {
	prefix := strings.Join(path, " ")
	under := func(cmd string) bool {
		return prefix == "" || cmd == prefix || strings.HasPrefix(cmd, prefix+" ")
	}
	for _, k := range sortedKeys(s.values) {
		found := false
		for cmd, flags := range schema {
			if under(cmd) && slices.Contains(flags, k) {
				found = true
				break
			}
		}
		if !found {
			return &Error{Path: f.Path, Key: dotted(path, k), Err: errors.New("unknown setting: not a flag of this command or its subcommands")}
		}
	}
	for _, k := range sortedKeys(s.commands) {
		sub := append(slices.Clone(path), k)
		if _, ok := schema[strings.Join(sub, " ")]; !ok {
			return &Error{Path: f.Path, Key: dotted(path, k), Err: errors.New("unknown command section")}
		}
		if err := f.check(schema, s.commands[k], sub); err != nil {
			return err
		}
	}
	return nil
}

func dotted(path []string, k string) string {
	return strings.Join(append(slices.Clone(path), k), ".")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// jsonError says where and how a file is not a JSON object, in the
// user's words (line and column), not the decoder's (issue 48: config
// errors carried Go parser text).
func jsonError(data []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("not a JSON object: it ends early (an object, list or string not closed)")
	case errors.As(err, &syn):
		msg := strings.TrimPrefix(syn.Error(), "invalid character ")
		return fmt.Errorf("not a JSON object: unexpected %s at %s", msg, lineCol(data, int(syn.Offset-1)))
	case errors.As(err, &typ):
		return fmt.Errorf("not a JSON object: the file holds a JSON %s", typ.Value)
	}
	return fmt.Errorf("not a JSON object: %v", err)
}

// lineCol is the line and column (from 1) of data's byte off.
func lineCol(data []byte, off int) string {
	line, col := 1, 1
	for _, c := range data[:max(0, min(off, len(data)))] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Sprintf("line %d, column %d", line, col)
}
