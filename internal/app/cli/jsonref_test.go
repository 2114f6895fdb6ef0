package cli

import (
	"bytes"
	"cmp"
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
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/compact"
	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/pipeline"
	"github.com/agentctx/agentctx/pipeline/eval"
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
	{"replay", "", replayOutput{}},
	{"summary-eval", "", summaryEvalOutput{}},
	{"ws offload", "", wsOffloadOutput{}},
	{"ws ls", "a list of", []workspace.Info{}},
	{"sessions ls", "a list, an object per session (a table on a terminal unless --json)", []pipeline.SessionInfo{}},
	{"sessions show ID", "", pipeline.SessionDetail{}},
	{"sessions rm, sessions prune", "what was deleted (with --dry-run, what would be)", pipeline.PruneReport{}},
	{"savings", "what agentctx saved, from the ledger (a table on a terminal unless --json)", savings.Report{}},
	{"config --json", "the effective settings of a command, with their sources", configReport{}},
	{"version", "", versionOutput{}},
	{"formats", "the input shapes the commands read", formatsOutput{}},
	{"tools", "the read-back tool definitions, a list (--format mcp prints MCP's own Tool objects instead)", []workspace.ToolDefinition{}},
	{"tools --format openai", "the same definitions in the OpenAI Chat Completions shape, a list", []workspace.OpenAITool{}},
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
		w.write(reflect.TypeOf(o.value))
	}
	for _, k := range w.undocumented {
		t.Errorf("JSON key %s has no documentation: document its field", k)
	}
	for _, p := range w.problems {
		t.Error(p)
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

// refNested is a type whose MarshalJSON prints a key of its own.
type refNested struct {
	A int           `json:"a"` // the a
	D time.Duration `json:"-"`
}

func (r refNested) MarshalJSON() ([]byte, error) {
	type plain refNested
	return json.Marshal(struct {
		plain
		DMS float64 `json:"d_ms"` // the d, milliseconds
	}{plain(r), 1})
}

// refOuter holds a refNested, in a list too.
type refOuter struct {
	N    refNested   `json:"n"`    // one nested
	List []refNested `json:"list"` // nested ones
}

// refUndocumented's MarshalJSON prints a key without documentation.
type refUndocumented struct {
	A int `json:"a"` // the a
}

func (r refUndocumented) MarshalJSON() ([]byte, error) {
	type plain refUndocumented
	return json.Marshal(struct {
		plain
		B int `json:"b"`
	}{plain(r), 1})
}

// refStray's MarshalJSON prints a key no struct declares, and leaves out
// its field.
type refStray struct {
	A int `json:"a"` // the a
}

func (refStray) MarshalJSON() ([]byte, error) { return []byte(`{"c":1}`), nil }

// TestJSONReferenceMarshalers: the reference descends into a type with its
// own MarshalJSON and lists what it prints, and a key it prints without a
// field or a documentation fails.
func TestJSONReferenceMarshalers(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		value                 any
		rows                  []string
		undocumented, problem []string
	}{
		{"nested", refOuter{}, []string{
			"| `n` | object | one nested |",
			"| `n.a` | integer | the a |",
			"| `n.d_ms` | number | the d, milliseconds |",
			"| `list` | list of object | nested ones |",
			"| `list[].a` | integer | the a |",
			"| `list[].d_ms` | number | the d, milliseconds |",
		}, nil, nil},
		{"top level", refNested{}, []string{"| `a` | integer | the a |", "| `d_ms` | number | the d, milliseconds |"}, nil, nil},
		{"undocumented key", refUndocumented{}, []string{"| `a` | integer | the a |", "| `b` | integer |  |"}, []string{"b (cli.refUndocumented)"}, nil},
		{"stray key", refStray{}, nil, nil, []string{"c: printed by cli.refStray's MarshalJSON without a field of its own", "a: field cli.refStray.A is not in the encoding of a filled example"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			docs := newFieldDocs(t)
			docs.tests = true
			w := &refWriter{b: &b, docs: docs}
			w.write(reflect.TypeOf(tc.value))
			var got []string
			for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
				if l != "" {
					got = append(got, l)
				}
			}
			if !slices.Equal(got, tc.rows) {
				t.Errorf("rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.rows, "\n"))
			}
			if !slices.Equal(w.undocumented, tc.undocumented) {
				t.Errorf("undocumented %q, want %q", w.undocumented, tc.undocumented)
			}
			if !slices.Equal(w.problems, tc.problem) {
				t.Errorf("problems %q, want %q", w.problems, tc.problem)
			}
		})
	}
}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	messageType       = reflect.TypeFor[agentctx.Message]()
	timeType          = reflect.TypeFor[time.Time]()
	rawMessageType    = reflect.TypeFor[json.RawMessage]()
)

// refWriter writes the reference's rows. The keys are those of the
// encoding of an example value with every field filled (see example), so
// that a type with its own MarshalJSON is described by what it prints: a
// key no field declares takes its documentation from the field of the
// struct the MarshalJSON method encodes (see fieldDocs.extra).
type refWriter struct {
	b            *bytes.Buffer
	docs         *fieldDocs
	undocumented []string // keys whose field has no documentation
	problems     []string // keys the encoding and the types disagree on
}

// write writes the keys of the encoding of a filled example of tp.
func (w *refWriter) write(tp reflect.Type) {
	v := example(tp, 0)
	raw, err := rawjson.Marshal(v.Interface())
	if err != nil {
		w.problems = append(w.problems, fmt.Sprintf("%s: encode an example: %v", tp, err))
		return
	}
	w.descend(tp, raw, "", map[reflect.Type]bool{})
}

// descend writes the keys under base of raw, the encoding of a value of
// type tp: an object's keys, those of a list's first element ("[]") or of
// a map's first value (".*").
func (w *refWriter) descend(tp reflect.Type, raw []byte, base string, seen map[reflect.Type]bool) {
	for tp.Kind() == reflect.Pointer {
		tp = tp.Elem()
	}
	if leaf(tp) {
		return
	}
	switch tp.Kind() {
	case reflect.Slice, reflect.Array:
		if rawjson.Kind(raw) != '[' {
			return
		}
		els, err := rawjson.Elements(raw)
		if err != nil || len(els) == 0 {
			return
		}
		w.descend(tp.Elem(), els[0], base+"[]", seen)
	case reflect.Map:
		if rawjson.Kind(raw) != '{' {
			return
		}
		ms, err := rawjson.Members(raw)
		if err != nil || len(ms) == 0 {
			return
		}
		w.descend(tp.Elem(), ms[0].Value, base+".*", seen)
	case reflect.Struct:
		if rawjson.Kind(raw) != '{' || seen[tp] {
			return
		}
		seen[tp] = true
		defer delete(seen, tp)
		prefix := base + "."
		if base == "" {
			prefix = ""
		}
		w.writeObject(tp, raw, prefix, seen)
	}
}

// jsonField is a struct field as encoding/json names it.
type jsonField struct {
	f        reflect.StructField
	owner    reflect.Type // the struct that declares it (an embedded one's own)
	optional bool
}

// jsonFields returns the fields of tp by their JSON key, those of embedded
// structs without a key included.
func jsonFields(tp reflect.Type, into map[string]jsonField) map[string]jsonField {
	for tp.Kind() == reflect.Pointer {
		tp = tp.Elem()
	}
	for i := range tp.NumField() {
		f := tp.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			jsonFields(f.Type, into)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, ok := into[name]; !ok {
			into[name] = jsonField{f: f, owner: tp, optional: strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")}
		}
	}
	return into
}

func (w *refWriter) writeObject(tp reflect.Type, raw []byte, prefix string, seen map[reflect.Type]bool) {
	ms, err := rawjson.Members(raw)
	if err != nil {
		w.problems = append(w.problems, fmt.Sprintf("%s: %v", tp, err))
		return
	}
	fields := jsonFields(tp, map[string]jsonField{})
	printed := map[string]bool{}
	for _, m := range ms {
		key := prefix + m.Key
		printed[m.Key] = true
		var about, typ string
		var inner reflect.Type
		optional := false
		if jf, ok := fields[m.Key]; ok {
			about, typ, optional, inner = w.docs.of(jf.owner, jf.f.Name), typeName(jf.f.Type), jf.optional, jf.f.Type
		} else if x, ok := w.docs.extra(tp, m.Key); ok {
			about, typ, optional = x.doc, cmp.Or(x.typ, kindName(m.Value)), x.optional
		} else {
			w.problems = append(w.problems, fmt.Sprintf("%s%s: printed by %s's MarshalJSON without a field of its own", prefix, m.Key, tp))
			continue
		}
		if about == "" {
			w.undocumented = append(w.undocumented, key+" ("+tp.String()+")")
		}
		if optional {
			about = strings.TrimSpace("(optional) " + about)
		}
		fmt.Fprintf(w.b, "| `%s` | %s | %s |\n", key, typ, strings.ReplaceAll(about, "|", `\|`))
		if inner != nil {
			w.descend(inner, m.Value, key, seen) // the keys under this one follow it
		}
	}
	for name, jf := range fields {
		if !printed[name] && !leaf(jf.f.Type) {
			w.problems = append(w.problems, fmt.Sprintf("%s%s: field %s.%s is not in the encoding of a filled example", prefix, name, tp, jf.f.Name))
		}
	}
}

// leaf reports whether a type's keys are not listed: messages (in the
// input's shape), times, and the types that encode themselves as text.
func leaf(tp reflect.Type) bool {
	return tp == messageType || tp == rawMessageType || tp.Implements(textMarshalerType) || reflect.PointerTo(tp).Implements(textMarshalerType)
}

// kindName is the type of a key that no field declares, from its value.
func kindName(raw []byte) string {
	switch rawjson.Kind(raw) {
	case '{':
		return "object"
	case '[':
		return "list"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "any JSON"
	}
	return "number"
}

// example returns a value of tp with every field, list and map filled, so
// that its encoding prints every key (an omitempty one included): strings
// "x", numbers 1, true, a list of one element, a map of one entry, a time.
// Messages, raw JSON and interfaces stay empty.
func example(tp reflect.Type, depth int) reflect.Value {
	v := reflect.New(tp).Elem()
	if depth > 8 || tp == messageType || tp == rawMessageType {
		return v
	}
	switch {
	case tp == timeType:
		return reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	case tp.Implements(marshalerType) && tp.Kind() != reflect.Struct && tp.Kind() != reflect.Pointer:
		return v
	}
	switch tp.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Pointer:
		p := reflect.New(tp.Elem())
		p.Elem().Set(example(tp.Elem(), depth+1))
		return p
	case reflect.Slice:
		if tp.Elem() == messageType {
			return v
		}
		return reflect.Append(reflect.MakeSlice(tp, 0, 1), example(tp.Elem(), depth+1))
	case reflect.Map:
		m := reflect.MakeMap(tp)
		m.SetMapIndex(example(tp.Key(), depth+1), example(tp.Elem(), depth+1))
		return m
	case reflect.Struct:
		for i := range tp.NumField() {
			if f := v.Field(i); f.CanSet() {
				f.Set(example(tp.Field(i).Type, depth+1))
			}
		}
	}
	return v
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
	root  string
	tests bool                // read the _test.go files too (TestJSONReferenceMarshalers)
	pkgs  map[string]*pkgDocs // by package path
}

// pkgDocs is the field documentation of one package.
type pkgDocs struct {
	fields map[string]map[string]string      // type → field → doc
	extras map[string]map[string]extraKeyDoc // type → JSON key → doc of a key its MarshalJSON adds
}

// extraKeyDoc documents a key a MarshalJSON method prints besides the
// type's fields: a field of the struct literal it encodes, and its type
// when the field is declared as an integer ("" otherwise: the type is
// then the kind of the value printed).
type extraKeyDoc struct {
	doc      string
	optional bool
	typ      string
}

func newFieldDocs(t *testing.T) *fieldDocs {
	_, file, _, _ := runtime.Caller(0)
	return &fieldDocs{root: filepath.Join(filepath.Dir(file), "..", "..", ".."), pkgs: map[string]*pkgDocs{}}
}

// of returns the documentation of field of the struct tp.
func (d *fieldDocs) of(tp reflect.Type, field string) string {
	p := d.pkg(tp)
	if p == nil {
		return ""
	}
	return p.fields[tp.Name()][field]
}

// extra returns the documentation of key, printed by the MarshalJSON
// method of tp without a field of tp's.
func (d *fieldDocs) extra(tp reflect.Type, key string) (extraKeyDoc, bool) {
	p := d.pkg(tp)
	if p == nil {
		return extraKeyDoc{}, false
	}
	x, ok := p.extras[tp.Name()][key]
	return x, ok
}

func (d *fieldDocs) pkg(tp reflect.Type) *pkgDocs {
	const module = "github.com/agentctx/agentctx"
	pkg := tp.PkgPath()
	if !strings.HasPrefix(pkg, module) {
		return nil
	}
	if p, ok := d.pkgs[pkg]; ok {
		return p
	}
	p := &pkgDocs{fields: map[string]map[string]string{}, extras: map[string]map[string]extraKeyDoc{}}
	d.pkgs[pkg] = p
	dir := filepath.Join(d.root, filepath.FromSlash(strings.TrimPrefix(pkg, module)))
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") && !d.tests {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			continue
		}
		for _, decl := range f.Decls {
			switch decl := decl.(type) {
			case *ast.GenDecl:
				for _, spec := range decl.Specs {
					if ts, ok := spec.(*ast.TypeSpec); ok {
						if st, ok := ts.Type.(*ast.StructType); ok {
							p.fields[ts.Name.Name] = structDocs(fset, st)
						}
					}
				}
			case *ast.FuncDecl:
				if decl.Name.Name != "MarshalJSON" || decl.Recv == nil || len(decl.Recv.List) != 1 || decl.Body == nil {
					continue
				}
				recv := decl.Recv.List[0].Type
				if star, ok := recv.(*ast.StarExpr); ok {
					recv = star.X
				}
				id, ok := recv.(*ast.Ident)
				if !ok {
					continue
				}
				extras := map[string]extraKeyDoc{}
				ast.Inspect(decl.Body, func(n ast.Node) bool {
					st, ok := n.(*ast.StructType)
					if !ok {
						return true
					}
					docs := structDocs(fset, st)
					for _, fl := range st.Fields.List {
						if fl.Tag == nil || len(fl.Names) == 0 {
							continue
						}
						tag := reflect.StructTag(strings.Trim(fl.Tag.Value, "`"))
						key, opts, _ := strings.Cut(tag.Get("json"), ",")
						if key == "" || key == "-" {
							continue
						}
						x := extraKeyDoc{doc: docs[fl.Names[0].Name], optional: strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")}
						if id, ok := fl.Type.(*ast.Ident); ok && (id.Name == "int" || id.Name == "int64") {
							x.typ = "integer"
						}
						extras[key] = x
					}
					return true
				})
				p.extras[id.Name] = extras
			}
		}
	}
	return p
}

// structDocs returns the documentation of each field of st: its doc
// comment and its line comment. A doc comment that names no field of the
// struct ("The tokens billed: ...") also documents the fields declared on
// the lines right after it without a doc comment of their own; one that
// names fields ("A and B are ...") documents those it names among them.
func structDocs(fset *token.FileSet, st *ast.StructType) map[string]string {
	names := map[string]bool{}
	for _, fl := range st.Fields.List {
		for _, n := range fl.Names {
			names[n.Name] = true
		}
	}
	namesAny := func(text string) bool {
		for _, w := range strings.FieldsFunc(text, notIdent) {
			if names[w] {
				return true
			}
		}
		return false
	}
	names1 := func(text, name string) bool {
		return slices.Contains(strings.FieldsFunc(text, notIdent), name)
	}
	fields := map[string]string{}
	var group string
	groupEnd := -1
	for _, fl := range st.Fields.List {
		line := fset.Position(fl.Pos()).Line
		for _, n := range fl.Names {
			text := ""
			switch {
			case fl.Doc != nil:
				text = fl.Doc.Text()
			case line == groupEnd+1 && (!namesAny(group) || names1(group, n.Name)):
				text = group
			}
			if fl.Comment != nil {
				text = strings.TrimSpace(text + " " + fl.Comment.Text())
			}
			fields[n.Name] = strings.Join(strings.Fields(text), " ")
		}
		switch {
		case fl.Doc != nil:
			group = fl.Doc.Text()
		case line != groupEnd+1:
			group = ""
		}
		groupEnd = fset.Position(fl.End()).Line
	}
	return fields
}

func notIdent(r rune) bool {
	return !(r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
}
