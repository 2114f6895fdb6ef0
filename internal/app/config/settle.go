package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/agentctx/agentctx/internal/base/secret"
)

// Source says where a setting's value came from.
type Source string

// Sources, from the strongest.
const (
	SourceFlag    Source = "flag"    // the command line
	SourceEnv     Source = "env"     // an AGENTCTX_* variable
	SourceFile    Source = "file"    // the configuration file
	SourceDefault Source = "default" // the flag's default
)

// Setting is the effective value of one flag and where it came from.
type Setting struct {
	Name   string `json:"name"`   // the flag, without dashes
	Value  string `json:"value"`  // as the flag prints it; secrets masked (see Mask)
	Source Source `json:"source"` // flag, env, file or default
	// Origin is the environment variable or the file key (with the file's
	// path) the value came from; empty for flag and default.
	Origin string `json:"origin,omitempty"`
}

// Options say where Settle finds a command's settings. The zero value
// settles every flag from the command line and defaults only.
type Options struct {
	// Command is the command's path below the root (["sessions",
	// "prune"]), to find its sections of File.
	Command []string
	// File is the configuration file; nil means none.
	File *File
	// Env names the environment variable that sets a flag, "" for none.
	// Nil means no flag is set from the environment.
	Env func(*pflag.Flag) string
	// LookupEnv reads the environment; nil means an empty environment.
	LookupEnv func(string) (string, bool)
	// SectionOnly reports the flags that the file's top level does not
	// set, only the command's own section (a flag that is a filter in
	// this command, where a shared default would surprise). Nil: none.
	SectionOnly func(*pflag.Flag) bool
	// Also returns the path of another command whose section the
	// command takes a flag's value from when its own section does not
	// set it, before the top level (agentctx claude and codex run a
	// proxy: the file's proxy section is theirs too); nil for none. Nil:
	// none for every flag.
	Also func(*pflag.Flag) []string
}

// Settle sets every flag of fs that the command line left unset (pflag's
// Changed) from its environment variable when that is set and not empty,
// else from the file, and returns every flag's effective setting, in the
// flag set's order. Flags set this way do not become Changed, so they
// never contradict a flag given on the command line. A value the flag
// rejects is an error matching ErrInvalid that names the variable or the
// file key; the flags are then partly set and the command must not run.
func Settle(fs *pflag.FlagSet, o Options) ([]Setting, error) {
	var out []Setting
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil {
			return
		}
		s := Setting{Name: f.Name, Source: SourceDefault}
		switch {
		case f.Changed:
			s.Source = SourceFlag
		default:
			if name := envName(o, f); name != "" {
				if v, ok := o.LookupEnv(name); ok && v != "" {
					if serr := f.Value.Set(v); serr != nil {
						err = fmt.Errorf("%s=%q: invalid value for --%s: %v: %w", name, Mask(f.Name, v), f.Name, valueError(f, serr), ErrInvalid)
						return
					}
					s.Source, s.Origin = SourceEnv, name
					break
				}
			}
			if vals, key, ok := o.lookup(f); ok {
				if serr := setValues(f, vals); serr != nil {
					err = &Error{Path: o.File.Path, Key: key, Err: fmt.Errorf("invalid value for --%s: %v", f.Name, valueError(f, serr))}
					return
				}
				s.Source, s.Origin = SourceFile, o.File.Path+": "+key
			}
		}
		s.Value = Mask(f.Name, f.Value.String())
		out = append(out, s)
	})
	return out, err
}

// lookup finds f's value in the file: the command's own sections, then
// Also's, then the top level.
func (o Options) lookup(f *pflag.Flag) ([]string, string, bool) {
	sectionOnly := o.SectionOnly != nil && o.SectionOnly(f)
	if o.Also != nil {
		if also := o.Also(f); also != nil {
			if vals, key, ok := o.File.Lookup(o.Command, f.Name, true); ok {
				return vals, key, true
			}
			if vals, key, ok := o.File.Lookup(also, f.Name, true); ok {
				return vals, key, true
			}
		}
	}
	return o.File.Lookup(o.Command, f.Name, sectionOnly)
}

func envName(o Options, f *pflag.Flag) string {
	if o.Env == nil || o.LookupEnv == nil {
		return ""
	}
	return o.Env(f)
}

// setValues sets a flag from a file's value(s): a flag that takes a list
// is replaced by them; any other takes exactly one.
func setValues(f *pflag.Flag, vals []string) error {
	if sv, ok := f.Value.(pflag.SliceValue); ok {
		return sv.Replace(vals)
	}
	if len(vals) != 1 {
		return errors.New("a list for a flag that takes one value")
	}
	return f.Value.Set(vals[0])
}

// Mask returns a flag's value fit to print: a database URL without its
// password (for store and any *-url flag whose value is one), and
// secret.Mask for flags whose name says they hold a secret: a word of the
// name (between dashes) is token, key, password or secret. A count of
// tokens (input-tokens, max-tokens) is not one.
func Mask(name, value string) string {
	if value == "" {
		return value
	}
	for _, w := range strings.Split(strings.ToLower(name), "-") {
		switch w {
		case "token", "key", "password", "secret":
			return secret.Mask
		}
	}
	if strings.Contains(value, "://") || strings.Contains(value, "password=") {
		return secret.URL(value)
	}
	return value
}

// valueError says what a flag of f's type wants, in place of a parser's
// text ("strconv.ParseInt: parsing \"abc\": invalid syntax"); other
// errors (the flag's own, which name what they want) are kept.
func valueError(f *pflag.Flag, err error) error {
	var ne *strconv.NumError
	isNum := errors.As(err, &ne)
	t := f.Value.Type()
	switch {
	case isNum && errors.Is(ne.Err, strconv.ErrRange):
		return errors.New("out of range")
	case isNum && t == "bool":
		return errors.New("want true or false")
	case isNum && strings.HasPrefix(t, "float"):
		return errors.New("want a number")
	case isNum:
		return errors.New("want a whole number")
	case t == "duration" && strings.HasPrefix(err.Error(), "time: "):
		return errors.New("want a duration such as 90s, 5m or 1h")
	}
	return err
}
