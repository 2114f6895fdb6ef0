package fakeupstream

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// geminiRequest is a decoded GenerateContentRequest: what the fake's
// rules and answers read of it.
type geminiRequest struct {
	Contents []geminiContent
	System   *geminiContent
	// Functions are the names of tools[].functionDeclarations.
	Functions []string
	// MaxOutputTokens is generationConfig.maxOutputTokens, 0 when unset.
	MaxOutputTokens int
	// The generationConfig.thinkingConfig.
	IncludeThoughts bool
	ThinkingBudget  *int
	ThinkingLevel   string

	// body is the request as JSON values (countTokens: the
	// generateContentRequest, or the body).
	body map[string]any
}

// geminiContent is a Content: a role and its parts.
type geminiContent struct {
	Role  string
	Parts []geminiPart
}

// geminiPart is a Part: one data field (text, a function call or
// response, or another kind of data), and its thought flag and signature.
type geminiPart struct {
	Text      *string
	Thought   bool
	Signature string
	Call      *geminiCall
	Response  *geminiResponse
}

// geminiCall is a functionCall part.
type geminiCall struct {
	ID   string         `json:"id"`
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
}

// geminiResponse is a functionResponse part.
type geminiResponse struct {
	ID       string
	Name     string
	Response map[string]any
}

// The fields the API knows, by message, in lowerCamelCase; proto JSON
// takes each also in snake_case. A field it does not know is a 400
// ("Invalid JSON payload received. Unknown name ...: Cannot find field.",
// the error of any Google API; e.g. functionResponse.id, before the API
// knew it: BerriAI/litellm#17080). From ai.google.dev/api/generate-content
// and ai.google.dev/api/caching (Content, Part, FunctionCall,
// FunctionResponse).
var (
	geminiRequestFields  = fieldSet("model", "contents", "tools", "toolConfig", "safetySettings", "systemInstruction", "generationConfig", "cachedContent")
	geminiContentFields  = fieldSet("role", "parts")
	geminiPartFields     = fieldSet("text", "inlineData", "functionCall", "functionResponse", "fileData", "executableCode", "codeExecutionResult", "thought", "thoughtSignature", "videoMetadata", "partMetadata", "mediaResolution")
	geminiCallFields     = fieldSet("id", "name", "args", "partialArgs", "willContinue")
	geminiResponseFields = fieldSet("id", "name", "response", "parts", "willContinue", "scheduling")
	// geminiDataFields are the Part's oneof "data": exactly one is set.
	geminiDataFields = []string{"text", "inlineData", "functionCall", "functionResponse", "fileData", "executableCode", "codeExecutionResult"}
)

func fieldSet(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
		m[snake(n)] = true
	}
	return m
}

// snake returns a lowerCamelCase name in snake_case.
func snake(name string) string {
	var b strings.Builder
	for _, r := range name {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// geminiField returns m's field name, given in lowerCamelCase, in either
// spelling.
func geminiField(m map[string]any, name string) any {
	if v, ok := m[name]; ok {
		return v
	}
	return m[snake(name)]
}

func hasField(m map[string]any, name string) bool {
	_, a := m[name]
	_, b := m[snake(name)]
	return a || b
}

// decodeGeminiBody decodes a generateContent (or, with countTokens, a
// countTokens) request body: the JSON values, and the request, or the
// API's 400 for a body it would not parse. It never panics.
func decodeGeminiBody(raw []byte, countTokens bool) (map[string]any, geminiRequest, *geminiError) {
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		return nil, geminiRequest{}, invalidArgument("Invalid JSON payload received. %s", err)
	}
	if body == nil {
		return nil, geminiRequest{}, invalidArgument("Invalid JSON payload received. Expected an object.")
	}
	gen, path := body, ""
	if countTokens {
		if g := geminiField(body, "generateContentRequest"); g != nil {
			m, ok := g.(map[string]any)
			if !ok {
				return body, geminiRequest{}, badValue("generate_content_request", "type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentRequest", g)
			}
			gen, path = m, "generate_content_request."
		} else {
			// countTokens takes contents alone, or a whole request.
			for k := range body {
				if k != "contents" && k != "model" {
					return body, geminiRequest{}, unknownName(k, "")
				}
			}
		}
	}
	req, err := decodeGeminiRequest(gen, path)
	req.body = gen
	return body, req, err
}

func unknownName(name, at string) *geminiError {
	if at == "" {
		return invalidArgument("Invalid JSON payload received. Unknown name %q: Cannot find field.", name)
	}
	return invalidArgument("Invalid JSON payload received. Unknown name %q at '%s': Cannot find field.", name, at)
}

// badValue is the API's 400 for a field of the wrong type.
func badValue(at, typ string, v any) *geminiError {
	b, _ := json.Marshal(v)
	return invalidArgument("Invalid JSON payload received. Invalid value at '%s' (%s), %s", at, typ, b)
}

func checkFields(m map[string]any, known map[string]bool, at string) *geminiError {
	for k := range m {
		if !known[k] {
			return unknownName(k, strings.TrimSuffix(at, "."))
		}
	}
	return nil
}

func decodeGeminiRequest(m map[string]any, at string) (geminiRequest, *geminiError) {
	var req geminiRequest
	if e := checkFields(m, geminiRequestFields, at); e != nil {
		return req, e
	}
	if v := geminiField(m, "contents"); v != nil {
		list, ok := v.([]any)
		if !ok {
			return req, badValue(at+"contents", "type.googleapis.com/google.ai.generativelanguage.v1beta.Content", v)
		}
		for i, cv := range list {
			ct, e := decodeContent(cv, fmt.Sprintf("%scontents[%d]", at, i))
			if e != nil {
				return req, e
			}
			req.Contents = append(req.Contents, ct)
		}
	}
	if v := geminiField(m, "systemInstruction"); v != nil {
		ct, e := decodeContent(v, at+"system_instruction")
		if e != nil {
			return req, e
		}
		req.System = &ct
	}
	if v := geminiField(m, "tools"); v != nil {
		if e := decodeTools(&req, v, at); e != nil {
			return req, e
		}
	}
	if v := geminiField(m, "generationConfig"); v != nil {
		if e := decodeGenerationConfig(&req, v, at); e != nil {
			return req, e
		}
	}
	return req, nil
}

// decodeTools reads a request's tools: the names of its function
// declarations.
func decodeTools(req *geminiRequest, v any, at string) *geminiError {
	list, ok := v.([]any)
	if !ok {
		return badValue(at+"tools", "type.googleapis.com/google.ai.generativelanguage.v1beta.Tool", v)
	}
	for i, tv := range list {
		t, ok := tv.(map[string]any)
		if !ok {
			return badValue(fmt.Sprintf("%stools[%d]", at, i), "type.googleapis.com/google.ai.generativelanguage.v1beta.Tool", tv)
		}
		fds := geminiField(t, "functionDeclarations")
		if fds == nil {
			continue
		}
		fl, ok := fds.([]any)
		if !ok {
			return badValue(fmt.Sprintf("%stools[%d].function_declarations", at, i), "type.googleapis.com/google.ai.generativelanguage.v1beta.FunctionDeclaration", fds)
		}
		for j, dv := range fl {
			d, _ := dv.(map[string]any)
			name, ok := d["name"].(string)
			if !ok {
				return badValue(fmt.Sprintf("%stools[%d].function_declarations[%d].name", at, i, j), "TYPE_STRING", d["name"])
			}
			req.Functions = append(req.Functions, name)
		}
	}
	return nil
}

// decodeGenerationConfig reads the generationConfig members the fake
// answers by: maxOutputTokens and thinkingConfig.
func decodeGenerationConfig(req *geminiRequest, v any, at string) *geminiError {
	gc, ok := v.(map[string]any)
	if !ok {
		return badValue(at+"generation_config", "type.googleapis.com/google.ai.generativelanguage.v1beta.GenerationConfig", v)
	}
	if mv := geminiField(gc, "maxOutputTokens"); mv != nil {
		n, ok := int32Of(mv)
		if !ok {
			return badValue(at+"generation_config.max_output_tokens", "TYPE_INT32", mv)
		}
		req.MaxOutputTokens = n
	}
	if tv := geminiField(gc, "thinkingConfig"); tv != nil {
		tc, ok := tv.(map[string]any)
		if !ok {
			return badValue(at+"generation_config.thinking_config", "type.googleapis.com/google.ai.generativelanguage.v1beta.ThinkingConfig", tv)
		}
		if iv := geminiField(tc, "includeThoughts"); iv != nil {
			b, ok := iv.(bool)
			if !ok {
				return badValue(at+"generation_config.thinking_config.include_thoughts", "TYPE_BOOL", iv)
			}
			req.IncludeThoughts = b
		}
		if bv := geminiField(tc, "thinkingBudget"); bv != nil {
			n, ok := int32Of(bv)
			if !ok {
				return badValue(at+"generation_config.thinking_config.thinking_budget", "TYPE_INT32", bv)
			}
			req.ThinkingBudget = &n
		}
		if lv := geminiField(tc, "thinkingLevel"); lv != nil {
			s, ok := lv.(string)
			if !ok {
				return badValue(at+"generation_config.thinking_config.thinking_level", "TYPE_ENUM", lv)
			}
			req.ThinkingLevel = s
		}
	}
	return nil
}

// int32Of returns a JSON number (or a decimal string, as proto JSON takes
// it) that is an int32.
func int32Of(v any) (int, bool) {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case string:
		if _, err := fmt.Sscan(x, &f); err != nil {
			return 0, false
		}
	default:
		return 0, false
	}
	if f != math.Trunc(f) || f < math.MinInt32 || f > math.MaxInt32 {
		return 0, false
	}
	return int(f), true
}

func decodeContent(v any, at string) (geminiContent, *geminiError) {
	var ct geminiContent
	m, ok := v.(map[string]any)
	if !ok {
		return ct, badValue(at, "type.googleapis.com/google.ai.generativelanguage.v1beta.Content", v)
	}
	if e := checkFields(m, geminiContentFields, at); e != nil {
		return ct, e
	}
	if rv, ok := m["role"]; ok {
		r, ok := rv.(string)
		if !ok {
			return ct, badValue(at+".role", "TYPE_STRING", rv)
		}
		ct.Role = r
	}
	pv := m["parts"]
	if pv == nil {
		return ct, nil
	}
	list, ok := pv.([]any)
	if !ok {
		return ct, badValue(at+".parts", "type.googleapis.com/google.ai.generativelanguage.v1beta.Part", pv)
	}
	for j, p := range list {
		part, e := decodePart(p, fmt.Sprintf("%s.parts[%d]", at, j))
		if e != nil {
			return ct, e
		}
		ct.Parts = append(ct.Parts, part)
	}
	return ct, nil
}

func decodePart(v any, at string) (geminiPart, *geminiError) {
	var p geminiPart
	m, ok := v.(map[string]any)
	if !ok {
		return p, badValue(at, "type.googleapis.com/google.ai.generativelanguage.v1beta.Part", v)
	}
	if e := checkFields(m, geminiPartFields, at); e != nil {
		return p, e
	}
	set := ""
	for _, d := range geminiDataFields {
		if !hasField(m, d) {
			continue
		}
		if set != "" {
			return p, invalidArgument("Invalid JSON payload received. Oneof field 'data' is already set. Cannot set '%s' (at '%s')", d, at)
		}
		set = d
	}
	if set == "" {
		return p, invalidArgument("* GenerateContentRequest.%s.data: required oneof field 'data' must have one initialized field\n", at)
	}
	if tv, ok := m["text"]; ok {
		t, ok := tv.(string)
		if !ok {
			return p, badValue(at+".text", "TYPE_STRING", tv)
		}
		p.Text = &t
	}
	if tv := geminiField(m, "thought"); tv != nil {
		b, ok := tv.(bool)
		if !ok {
			return p, badValue(at+".thought", "TYPE_BOOL", tv)
		}
		p.Thought = b
	}
	if sv := geminiField(m, "thoughtSignature"); sv != nil {
		sig, ok := sv.(string)
		if !ok {
			return p, badValue(at+".thought_signature", "TYPE_BYTES", sv)
		}
		if !isBase64(sig) {
			return p, invalidArgument("Invalid value at '%s.thought_signature' (TYPE_BYTES), Base64 decoding failed for %q", at, sig)
		}
		p.Signature = sig
	}
	if cv := geminiField(m, "functionCall"); cv != nil {
		call, e := decodeCall(cv, at+".function_call")
		if e != nil {
			return p, e
		}
		p.Call = call
	}
	if rv := geminiField(m, "functionResponse"); rv != nil {
		resp, e := decodeFunctionResponse(rv, at+".function_response")
		if e != nil {
			return p, e
		}
		p.Response = resp
	}
	return p, nil
}

// decodeCall reads a part's functionCall: its id, name and args.
func decodeCall(cv any, at string) (*geminiCall, *geminiError) {
	fc, ok := cv.(map[string]any)
	if !ok {
		return nil, badValue(at, "type.googleapis.com/google.ai.generativelanguage.v1beta.FunctionCall", cv)
	}
	if e := checkFields(fc, geminiCallFields, at); e != nil {
		return nil, e
	}
	var call geminiCall
	var e *geminiError
	if call.ID, call.Name, e = idName(fc, at); e != nil {
		return nil, e
	}
	if av, ok := fc["args"]; ok && av != nil {
		args, ok := av.(map[string]any)
		if !ok {
			return nil, badValue(at+".args", "type.googleapis.com/google.protobuf.Struct", av)
		}
		call.Args = args
	}
	return &call, nil
}

// decodeFunctionResponse reads a part's functionResponse: its id, name and
// response.
func decodeFunctionResponse(rv any, at string) (*geminiResponse, *geminiError) {
	fr, ok := rv.(map[string]any)
	if !ok {
		return nil, badValue(at, "type.googleapis.com/google.ai.generativelanguage.v1beta.FunctionResponse", rv)
	}
	if e := checkFields(fr, geminiResponseFields, at); e != nil {
		return nil, e
	}
	var resp geminiResponse
	var e *geminiError
	if resp.ID, resp.Name, e = idName(fr, at); e != nil {
		return nil, e
	}
	if av, ok := fr["response"]; ok && av != nil {
		r, ok := av.(map[string]any)
		if !ok {
			return nil, badValue(at+".response", "type.googleapis.com/google.protobuf.Struct", av)
		}
		resp.Response = r
	}
	return &resp, nil
}

// idName returns a function call's or response's id and name, strings.
func idName(m map[string]any, at string) (id, name string, e *geminiError) {
	for _, f := range []struct {
		key string
		dst *string
	}{{"id", &id}, {"name", &name}} {
		if v, ok := m[f.key]; ok && v != nil {
			s, ok := v.(string)
			if !ok {
				return "", "", badValue(at+"."+f.key, "TYPE_STRING", v)
			}
			*f.dst = s
		}
	}
	return id, name, nil
}

// isBase64 reports what proto JSON takes for bytes: standard or URL-safe
// base64, padded or not.
func isBase64(s string) bool {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if _, err := enc.DecodeString(s); err == nil {
			return true
		}
	}
	return false
}
