package fakeupstream

import (
	"encoding/base64"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentctx/agentctx/pricing"
)

// The Gemini request decoder, and the rules and billing that read what it
// decoded, never panic, whatever the body; a body it accepts decodes
// again to the same request.
func FuzzGeminiDecode(f *testing.F) {
	for _, seed := range []string{
		`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`,
		`{"contents":[{"role":"user","parts":[{"text":"x"}]},{"role":"model","parts":[{"text":"t","thought":true},{"functionCall":{"id":"c1","name":"run_shell_command","args":{"command":"ls"}},"thoughtSignature":"skip_thought_signature_validator"}]},{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"run_shell_command","response":{"output":"a"}}}]}],"systemInstruction":{"parts":[{"text":"sys"}]},"tools":[{"functionDeclarations":[{"name":"run_shell_command","parametersJsonSchema":{"type":"object"}}]}],"generationConfig":{"maxOutputTokens":100,"thinkingConfig":{"includeThoughts":true,"thinkingBudget":8192,"thinkingLevel":"HIGH"}}}`,
		`{"generateContentRequest":{"model":"models/m","contents":[{"parts":[{"inlineData":{"mimeType":"image/png","data":"AAAA"}}]}]}}`,
		`{"contents":[{"role":"model","parts":[{"functionCall":{"name":"f","args":[1]}}]}]}`,
		`{"contents":[{"parts":[{"text":1,"functionCall":null}]}],"generation_config":{"max_output_tokens":"12"}}`,
		`{"contents":"x","tools":[{"functionDeclarations":[{}]}]}`,
		`[]`, `null`, `{}`, `{"contents":[null,[],{"parts":[null]}]}`,
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	s := New(Options{})
	f.Fuzz(func(t *testing.T, raw []byte, countTokens bool) {
		body, req, err := decodeGeminiBody(raw, countTokens)
		if err != nil {
			if err.Code != 400 || err.Status != "INVALID_ARGUMENT" || err.Message == "" {
				t.Fatalf("decode error %+v: want a 400 INVALID_ARGUMENT with a message", err)
			}
			return
		}
		for _, model := range []string{"gemini-2.5-flash", "gemini-3-pro-preview"} {
			s.checkGemini(model, req, len(raw))
		}
		requestBlocks(APIGemini, req.body)
		if body != nil {
			requestBlocks(APIGemini, body)
		}
		_, again, err := decodeGeminiBody(raw, countTokens)
		if err != nil || len(again.Contents) != len(req.Contents) || len(again.Functions) != len(req.Functions) {
			t.Fatalf("a second decode differs: %v", err)
		}
	})
}

func TestGeminiSignaturePrefix(t *testing.T) {
	if got := base64.StdEncoding.EncodeToString([]byte(geminiSigMagic)); got != GeminiSignaturePrefix {
		t.Fatalf("GeminiSignaturePrefix = %q, the encoding of %q is %q", GeminiSignaturePrefix, geminiSigMagic, got)
	}
}

func TestIsGemini3(t *testing.T) {
	for model, want := range map[string]bool{
		"gemini-3-pro-preview": true, "gemini-3.1-pro-preview": true, "models/gemini-3-flash-preview": true, "gemini-4-argon": true,
		"gemini-2.5-pro": false, "gemini-2.5-flash": false, "gemini-1.5-pro": false, "gemini-": false, "gemini-exp": false, "gpt-5": false, "": false,
	} {
		if got := isGemini3(model); got != want {
			t.Errorf("isGemini3(%q) = %v, want %v", model, got, want)
		}
	}
}

func TestGeminiPrices(t *testing.T) {
	g := DefaultGeminiPricing()
	for _, tc := range []struct {
		model      string
		prompt     int
		in, out    float64
		minCaching int
	}{
		{"gemini-2.5-pro", 1000, 1.25, 10, 2048},
		{"gemini-2.5-pro", GeminiLongPrompt + 1, 2.50, 15, 2048},
		{"gemini-2.5-flash", GeminiLongPrompt + 1, 0.30, 2.50, 2048}, // one price at every size
		{"gemini-2.5-flash-lite", 1000, 0.10, 0.40, 2048},
		{"gemini-3-pro-preview", 1000, 2, 12, 4096},
		{"gemini-3-pro-preview", 300_000, 4, 18, 4096},
		{"models/gemini-3-flash-preview", 1000, 0.50, 3, 4096},
		{"gemini-unknown", 1000, 1.25, 10, 2048}, // the fallback, gemini-2.5-pro
	} {
		p := g.prices(tc.model, tc.prompt)
		if p.Input != tc.in || p.Output != tc.out || p.MinCacheable != tc.minCaching || math.Abs(p.CacheRead-p.Input/10) > 1e-12 {
			t.Errorf("%s at %d tokens: %+v; want in %g, out %g, cached a tenth, minimum %d", tc.model, tc.prompt, p, tc.in, tc.out, tc.minCaching)
		}
	}
	if p := (GeminiPricing{Short: pricing.Table{}}).prices("gemini-2.5-pro", 1); p.MinCacheable == 0 || p.TTL == 0 {
		t.Errorf("an empty table: %+v, want the cache parameters still set", p)
	}
}

func TestSplitText(t *testing.T) {
	in := strings.Repeat("aé", 50)
	pieces := splitText(in, 7)
	if strings.Join(pieces, "") != in {
		t.Fatal("the pieces do not join back")
	}
	for _, p := range pieces {
		if len(p) > 7 || !strings.HasPrefix(in[strings.Index(in, p):], p) {
			t.Fatalf("piece %q", p)
		}
		if !utf8.ValidString(p) {
			t.Fatalf("piece %q cuts a rune", p)
		}
	}
}
