package cli

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/base/rawjson"
	"github.com/agentctx/agentctx/transcript"
)

func newFormatsCmd(e *env) *cobra.Command {
	var markdown bool
	cmd := &cobra.Command{
		Use:   "formats",
		Short: "List the input shapes agentctx reads, with an example of each",
		Long: `formats lists every input shape the commands read: how each is
recognised from its content, what is written back, and an example
--markdown prints the table and examples of the
README's "Input formats" section.`,
		Example: `  agentctx formats | jq -r '.formats[].name'
  agentctx formats --markdown`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fs := transcript.Formats()
			if markdown {
				if err := writeFormatsMarkdown(e.s.Out, fs); err != nil {
					return fmt.Errorf("write output: %w", err)
				}
				return nil
			}
			return e.writeJSON(cmd.Context(), formatsOutput{fs})
		},
	}
	cmd.Flags().BoolVar(&markdown, "markdown", false, "print a Markdown table and the examples")
	return cmd
}

// formatsOutput is what formats prints.
type formatsOutput struct {
	Formats []agentctx.FormatInfo `json:"formats"` // every input shape, in the order they are told apart
}

// spread lays out a one-line JSON document for reading: the members of a
// top-level object and the elements of a top-level array (or of a list of
// messages in the object) one per line, everything else compact. JSON
// Lines are left as they are.
func spread(doc []byte, indent string) []byte {
	if bytes.Count(bytes.TrimSpace(doc), []byte("\n")) > 0 {
		return doc
	}
	doc = bytes.TrimSpace(doc)
	switch rawjson.Kind(doc) {
	case '[':
		elems, err := rawjson.Elements(doc)
		if err != nil || len(elems) == 0 {
			return doc
		}
		out := []byte("[\n")
		for k, el := range elems {
			out = append(append(out, indent+"  "...), el...)
			if k < len(elems)-1 {
				out = append(out, ',')
			}
			out = append(out, '\n')
		}
		return append(append(out, indent...), ']')
	case '{':
		if indent != "" {
			return doc
		}
		ms, err := rawjson.Members(doc)
		if err != nil || len(ms) == 0 {
			return doc
		}
		out := []byte("{\n")
		for k, m := range ms {
			out = append(append(out, "  "...), m.RawKey...)
			out = append(out, ": "...)
			if m.Key == "messages" || m.Key == "history" {
				out = append(out, spread(m.Value, "  ")...)
			} else {
				out = append(out, m.Value...)
			}
			if k < len(ms)-1 {
				out = append(out, ',')
			}
			out = append(out, '\n')
		}
		return append(out, '}')
	}
	return doc
}

// writeFormatsMarkdown writes the formats as a Markdown table followed by
// one example per format (see spread).
func writeFormatsMarkdown(w io.Writer, fs []agentctx.FormatInfo) error {
	var b strings.Builder
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	b.WriteString("| format | shape | recognised by | written back as |\n|---|---|---|---|\n")
	for _, f := range fs {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", f.Format, cell(f.Name), cell(f.DetectedBy), cell(f.WrittenAs))
	}
	for _, f := range fs {
		fmt.Fprintf(&b, "\n`%s`:\n\n```json\n%s\n```\n", f.Format, strings.TrimRight(string(spread([]byte(f.Example), "")), "\n"))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
