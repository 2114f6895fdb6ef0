package cli

import (
	"bytes"
	"encoding"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/pipeline/eval"
	"github.com/agentctx/agentctx/pipeline/replay"
	"github.com/agentctx/agentctx/proxy"
	"github.com/agentctx/agentctx/prune"
	"github.com/agentctx/agentctx/savings"
	"github.com/agentctx/agentctx/workspace"
)

var updateJSONRef = flag.Bool("update-json-reference", false, "rewrite docs/JSON.md from the output types")

// jsonOutputs are the JSON documents the commands print, in the order of
// the reference. A command that prints a new shape adds its entry here;
// docs/JSON.md is generated from these types and their field comments.
var jsonOutputs = []struct {
	command, about string
	value          any
}{
	{"count", "one object per input", countOutput{}},
	{"validate", "one object per conversation", validateOutput{}},
	{"validate --repair", "one object per conversation", repairOutput{}},
	{"offload", "", offloadOutput{}},
	{"offload-one", "", offloadOneOutput{}},
	{"prune", "", prune.Result{}},
	{"compact", "", compact.Result{}},
	{"compact --check", "", compact.CheckResult{}},
	{"prepare", "one object per conversation; a request body keeps its other members around messages and report unless --messages-only", prepareOutput{}},
	{"prepare --out DIR", "one object per conversation, with --json", prepareFileOutput{}},
	{"eval", "", eval.Evaluation{}},
	{"replay", "", replay.Result{}},
	{"summary-eval", "", summaryEvalOutput{}},
	{"ws offload", "", wsOffloadOutput{}},
	{"ws ls", "a list of", []workspace.Info{}},
	{"sessions ls", "a list, an object per session (a table on a terminal unless --json)", []pipeline.SessionInfo{}},
	{"sessions show ID", "", pipeline.SessionDetail{}},
	{"sessions rm, sessions prune", "what was deleted (with --dry-run, what would be)", pipeline.PruneReport{}},
	{"savings", "what agentctx saved, from the ledger (a table on a terminal unless --json)", savings.Report{}},
	{"config --json", "the effective settings of a command, with their sources", configReport{}},
	{"version", "", versionOutput{}},
	{"proxy: GET /agentctx/stats", "the proxy's statistics", proxy.StatsDocument{}},
}

// TestJSONReference: docs/JSON.md lists every key of every JSON output,
// generated from the types (go test ./internal/app/cli -run TestJSONReference
// -update-json-reference rewrites it).
func TestJSONReference(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("# JSON output reference\n\n")
	b.WriteString("Every key the commands print as JSON, with its type and meaning. Generated from the Go types\n")
	b.WriteString("and their documentation by `go test ./internal/app/cli -run TestJSONReference -update-json-reference`;\n")
	b.WriteString("the test fails when this file and the types differ. `messages` hold messages in the input's shape\n")
	b.WriteString("(Anthropic or OpenAI, every member kept); keys marked optional are left out when empty.\n")
	w := &refWriter{b: &b, docs: newFieldDocs(t)}
	for _, o := range jsonOutputs {
		fmt.Fprintf(&b, "\n## `agentctx %s`\n\n", o.command)
		if o.about != "" {
			fmt.Fprintf(&b, "%s%s.\n\n", strings.ToUpper(o.about[:1]), o.about[1:])
		}
		b.WriteString("| key | type | meaning |\n|---|---|---|\n")
		tp := reflect.TypeOf(o.value)
		prefix := ""
		if tp.Kind() == reflect.Slice {
			prefix, tp = "[].", tp.Elem()
		}
		w.writeKeys(tp, prefix, map[reflect.Type]bool{})
	}
	for _, k := range w.undocumented {
		t.Errorf("JSON key %s has no documentation: document its field", k)
	}
	path := filepath.Join("..", "..", "..", "docs", "JSON.md")
	if *updateJSONRef {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./internal/app/cli -run TestJSONReference -update-json-reference writes it)", err)
	}
	if !bytes.Equal(have, b.Bytes()) {
		t.Errorf("docs/JSON.md is not what the output types say: go test ./internal/app/cli -run TestJSONReference -update-json-reference rewrites it")
	}
}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	messageType       = reflect.TypeFor[agentctx.Message]()
)

// refWriter writes the reference's rows.
type refWriter struct {
	b            *bytes.Buffer
	docs         *fieldDocs
	undocumented []string // keys whose field has no documentation
}

func (w *refWriter) writeKeys(tp reflect.Type, prefix string, seen map[reflect.Type]bool) {
	b, docs := w.b, w.docs
	for tp.Kind() == reflect.Pointer {
		tp = tp.Elem()
	}
	if seen[tp] {
		return
	}
	seen[tp] = true
	defer delete(seen, tp)
	for i := range tp.NumField() {
		f := tp.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		ft := f.Type
		if f.Anonymous && name == "" {
			w.writeKeys(ft, prefix, seen)
			continue
		}
		if name == "" {
			name = f.Name
		}
		about := docs.of(tp, f.Name)
		if strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero") {
			about = strings.TrimSpace("(optional) " + about)
		}
		key := prefix + name
		if strings.TrimPrefix(about, "(optional)") == "" && strings.TrimPrefix(about, "(optional) ") == "" {
			w.undocumented = append(w.undocumented, key+" ("+tp.String()+"."+f.Name+")")
		}
		fmt.Fprintf(b, "| `%s` | %s | %s |\n", key, typeName(ft), strings.ReplaceAll(about, "|", `\|`))
		inner := ft
		sub := key + "."
		for inner.Kind() == reflect.Pointer || inner.Kind() == reflect.Slice || inner.Kind() == reflect.Map {
			if inner.Kind() == reflect.Slice {
				sub = strings.TrimSuffix(sub, ".") + "[]."
			} else if inner.Kind() == reflect.Map {
				sub = strings.TrimSuffix(sub, ".") + ".*."
			}
			inner = inner.Elem()
		}
		if inner.Kind() == reflect.Struct && !leaf(inner) {
			w.writeKeys(inner, sub, seen)
		}
	}
}

// leaf reports whether a type encodes itself (messages, times).
func leaf(tp reflect.Type) bool {
	return tp == messageType || tp.Implements(marshalerType) || reflect.PointerTo(tp).Implements(marshalerType) ||
		tp.Implements(textMarshalerType) || reflect.PointerTo(tp).Implements(textMarshalerType)
}

func typeName(tp reflect.Type) string {
	switch {
	case tp == messageType:
		return "message"
	case tp.String() == "time.Time":
		return "string (RFC 3339 time)"
	case tp.String() == "json.RawMessage":
		return "any JSON"
	}
	switch tp.Kind() {
	case reflect.Pointer:
		return typeName(tp.Elem()) + " or null"
	case reflect.Slice:
		return "list of " + typeName(tp.Elem())
	case reflect.Map:
		return "object of " + typeName(tp.Elem())
	case reflect.Struct:
		if leaf(tp) {
			return "string"
		}
		return "object"
	case reflect.Bool:
		return "boolean"
	case reflect.String:
		return "string"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Interface:
		return "any JSON"
	}
	return tp.Kind().String()
}

// fieldDocs reads the documentation of struct fields from the module's
// source.
type fieldDocs struct {
	root string
	pkgs map[string]map[string]map[string]string // package path → type → field → doc
}

func newFieldDocs(t *testing.T) *fieldDocs {
	_, file, _, _ := runtime.Caller(0)
	return &fieldDocs{root: filepath.Join(filepath.Dir(file), "..", "..", ".."), pkgs: map[string]map[string]map[string]string{}}
}

func (d *fieldDocs) of(tp reflect.Type, field string) string {
	const module = "github.com/agentctx/agentctx"
	pkg := tp.PkgPath()
	if !strings.HasPrefix(pkg, module) {
		return ""
	}
	types, ok := d.pkgs[pkg]
	if !ok {
		types = map[string]map[string]string{}
		d.pkgs[pkg] = types
		dir := filepath.Join(d.root, filepath.FromSlash(strings.TrimPrefix(pkg, module)))
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		fset := token.NewFileSet()
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
			if err != nil {
				continue
			}
			ast.Inspect(f, func(n ast.Node) bool {
				ts, ok := n.(*ast.TypeSpec)
				if !ok {
					return true
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					return true
				}
				fields := map[string]string{}
				// A doc comment also documents the fields declared on the
				// lines right after it without their own ("A and B are
				// ...", "The tokens billed: ...").
				var group string
				groupEnd := -1
				for _, fl := range st.Fields.List {
					line := fset.Position(fl.Pos()).Line
					text := ""
					switch {
					case fl.Doc != nil:
						text = fl.Doc.Text()
						group = text
					case line == groupEnd+1:
						text = group
					default:
						group = ""
					}
					groupEnd = fset.Position(fl.End()).Line
					if fl.Comment != nil {
						text = strings.TrimSpace(text + " " + fl.Comment.Text())
					}
					for _, n := range fl.Names {
						fields[n.Name] = strings.Join(strings.Fields(text), " ")
					}
				}
				types[ts.Name.Name] = fields
				return true
			})
		}
	}
	return types[tp.Name()][field]
}
